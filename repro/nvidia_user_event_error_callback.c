/* NVIDIA 580.159.04: after clSetUserEventStatus(ev, CL_OUT_OF_RESOURCES) the CL_COMPLETE callback
 * receives CL_COMPLETE (0), not the error; the spec (clSetEventCallback) passes the error code.
 * PoCL 3.1: the callback never runs. */
#include "common.h"
#include <unistd.h>

static volatile cl_int got = 12345;
static void CL_CALLBACK cb(cl_event e, cl_int status, void *u) { (void)e; (void)u; got = status; }

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_event ev = clCreateUserEvent(ctx, &err);
    CHECK(clSetEventCallback(ev, CL_COMPLETE, cb, NULL));
    CHECK(clSetUserEventStatus(ev, CL_OUT_OF_RESOURCES));
    for (int i = 0; i < 200 && got == 12345; i++) usleep(10000);
    cl_int st = 0;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (got == 12345) printf("callback never ran (status reads %d)\nQUIRK REPRODUCED (callback missing)\n", st);
    else printf("callback got %d, status reads %d (spec: %d)\n%s\n", got, st, CL_OUT_OF_RESOURCES,
                got == CL_OUT_OF_RESOURCES ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
