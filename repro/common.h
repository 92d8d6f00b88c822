/* Shared by the reproductions in this folder: pick the first device of the first platform whose
 * name contains argv[1] (all platforms when absent), print what is being run, and check calls. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS /* clCreateCommandQueue, for 1.2 platforms (Oclgrind) */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pick(int argc, char **argv, cl_platform_id *out_p, cl_device_id *out_d, char *name, size_t n) {
    const char *want = argc > 1 ? argv[1] : "";
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 0;
    for (cl_uint i = 0; i < np; i++) {
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, n, name, NULL);
        if (!strstr(name, want)) continue;
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, out_d, NULL) != CL_SUCCESS) continue;
        *out_p = ps[i];
        char ver[256] = {0};
        clGetDeviceInfo(*out_d, CL_DRIVER_VERSION, sizeof ver, ver, NULL);
        printf("platform: %s, driver %s\n", name, ver);
        return 1;
    }
    printf("no platform matching '%s'\n", want);
    return 0;
}

#define CHECK(call)                                                                   \
    do {                                                                              \
        cl_int err_ = (call);                                                         \
        if (err_ != CL_SUCCESS) { printf("%s -> %d\n", #call, err_); }                \
    } while (0)
