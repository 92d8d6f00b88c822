/* NVIDIA 580.159.04 (H100): a kernel argument set with clSetKernelArgSVMPointer and later set to
 * a buffer with clSetKernelArg makes clEnqueueNDRangeKernel fail with CL_INVALID_KERNEL_ARGS
 * (the soak test's second round, 2026-11-25; the spec lets an argument be set to either). Tries
 * the switch plainly ("plain"), after a NULL SVM pointer ("null-svm"), and after setting the
 * argument to NULL as a buffer first ("null-mem"), and the other direction ("buffer-then-svm").
 * Prints "QUIRK REPRODUCED" for each failing way, and "ok: <way>" for each working one.
 *
 *   gcc -O1 -o /tmp/svmarg repro/nvidia_svm_then_buffer_kernel_arg.c -lOpenCL
 *   /tmp/svmarg NVIDIA */
#include "common.h"

static const char *src = "__kernel void inc(__global uint* p) { p[get_global_id(0)] += 1u; }";

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256];
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 1;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(clBuildProgram(prog, 1, &d, "-cl-std=CL2.0", NULL, NULL));
    size_t n = 64;
    void *svm = clSVMAlloc(ctx, CL_MEM_READ_WRITE, n * 4, 0);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
    cl_mem null_mem = NULL;
    const char *ways[] = {"plain", "null-svm", "null-mem", "buffer-then-svm"};
    for (int w = 0; w < 4; w++) {
        cl_kernel k = clCreateKernel(prog, "inc", &err);
        cl_int e0;
        if (w == 3) {
            CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
            e0 = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
            CHECK(clSetKernelArgSVMPointer(k, 0, svm));
        } else {
            CHECK(clSetKernelArgSVMPointer(k, 0, svm));
            e0 = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
            if (w == 1) CHECK(clSetKernelArgSVMPointer(k, 0, NULL));
            if (w == 2) CHECK(clSetKernelArg(k, 0, sizeof null_mem, &null_mem));
            CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
        }
        cl_int e1 = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
        clFinish(q);
        if (e0 || e1) printf("QUIRK REPRODUCED (%s): first enqueue %d, after the switch %d\n", ways[w], e0, e1);
        else printf("ok: %s\n", ways[w]);
        clReleaseKernel(k);
    }
    clSVMFree(ctx, svm);
    clReleaseMemObject(buf);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
