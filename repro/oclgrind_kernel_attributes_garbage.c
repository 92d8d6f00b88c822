/* Oclgrind 21.10: clGetKernelInfo(CL_KERNEL_ATTRIBUTES) for a kernel declared with
 * __attribute__((reqd_work_group_size(4, 1, 1))) returns bytes that are neither empty nor the
 * attribute text (uninitialised memory, different on every run). PoCL 3.1 and the Intel CPU
 * runtime return "" or "reqd_work_group_size(4,1,1)". */
#include "common.h"

static const char *src =
    "__kernel __attribute__((reqd_work_group_size(4, 1, 1)))\n"
    "void fixed(__global int* a) { a[get_global_id(0)] += 1; }\n";

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(clBuildProgram(prog, 1, &d, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "fixed", &err);
    size_t n = 0;
    CHECK(clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, 0, NULL, &n));
    char *attrs = calloc(n + 1, 1);
    CHECK(clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, n, attrs, NULL));
    int ok = n <= 1 || strstr(attrs, "reqd_work_group_size") != NULL;
    printf("CL_KERNEL_ATTRIBUTES: %zu bytes: ", n);
    for (size_t i = 0; i + 1 < n && i < 40; i++) printf(attrs[i] >= 32 && attrs[i] < 127 ? "%c" : "\\x%02x", (unsigned char)attrs[i]);
    printf("\n%s\n", ok ? "spec behaviour" : "QUIRK REPRODUCED");
    free(attrs);
    return 0;
}
