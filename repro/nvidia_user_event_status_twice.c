/* NVIDIA 580.159.04: a second clSetUserEventStatus(ev, CL_COMPLETE) returns CL_SUCCESS; the spec
 * requires CL_INVALID_OPERATION (the status can be set once). */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_event ev = clCreateUserEvent(ctx, &err);
    cl_int first = clSetUserEventStatus(ev, CL_COMPLETE);
    cl_int second = clSetUserEventStatus(ev, CL_COMPLETE);
    printf("first %d, second %d (spec: %d)\n%s\n", first, second, CL_INVALID_OPERATION,
           second == CL_INVALID_OPERATION ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
