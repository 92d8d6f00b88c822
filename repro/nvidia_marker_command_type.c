/* NVIDIA 580.159.04: a marker (or barrier) enqueued with a non-empty wait list reports
 * CL_EVENT_COMMAND_TYPE 0x4003 instead of CL_COMMAND_MARKER (0x11FE) / CL_COMMAND_BARRIER (0x1205).
 * Expected output: both types printed as the spec's values. */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_event gate = clCreateUserEvent(ctx, &err);
    cl_event m, b, m0;
    CHECK(clEnqueueMarkerWithWaitList(q, 1, &gate, &m));
    CHECK(clEnqueueBarrierWithWaitList(q, 1, &gate, &b));
    CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m0));
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q));
    cl_command_type tm = 0, tb = 0, t0 = 0;
    clGetEventInfo(m, CL_EVENT_COMMAND_TYPE, sizeof tm, &tm, NULL);
    clGetEventInfo(b, CL_EVENT_COMMAND_TYPE, sizeof tb, &tb, NULL);
    clGetEventInfo(m0, CL_EVENT_COMMAND_TYPE, sizeof t0, &t0, NULL);
    printf("marker with wait list: %#x (spec %#x); barrier with wait list: %#x (spec %#x); marker without: %#x\n",
           tm, CL_COMMAND_MARKER, tb, CL_COMMAND_BARRIER, t0);
    printf("%s\n", tm == CL_COMMAND_MARKER && tb == CL_COMMAND_BARRIER ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
