/* PoCL 5.0 (Debian 5.0+debian, CPU device, on the GPU machine): clGetKernelWorkGroupInfo
 * (CL_KERNEL_LOCAL_MEM_SIZE) reads 0 for a kernel whose __local pointer argument was set to 16
 * bytes with clSetKernelArg; the spec counts such arguments in. PoCL 3.1, the Intel CPU runtime,
 * Oclgrind and NVIDIA report at least 16. */
#include "common.h"

static const char *src =
    "__kernel void k(__global int* a, __local int* tmp) {\n"
    "    tmp[get_local_id(0)] = a[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    a[get_global_id(0)] = tmp[3 - get_local_id(0)];\n"
    "}\n";

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(clBuildProgram(prog, 1, &d, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "k", &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 16, NULL, &err);
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, 16, NULL));
    cl_ulong local = 0;
    CHECK(clGetKernelWorkGroupInfo(k, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, NULL));
    printf("CL_KERNEL_LOCAL_MEM_SIZE with a 16-byte __local argument: %llu\n%s\n",
           (unsigned long long)local, local >= 16 ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
