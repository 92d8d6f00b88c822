/* NVIDIA on two GPUs of one context (2 x H200, 2026-11-26): cl-tests'
 * multi_device::images_and_svm_cross_devices died with SIGSEGV (the harness printed the test's
 * name and nothing after it). This program makes the same calls without the workspace, one step
 * at a time, printing each step before it runs, so the last line printed names the call that
 * crashed: a context of every GPU of the platform, one in-order queue per GPU, then
 *   (1) a 2-D CL_R/CL_UNSIGNED_INT32 8x4 image written on queue A, read back on queue B;
 *   (2) coarse-grain SVM: allocated, mapped and written on A, a kernel adding 5 run on B,
 *       mapped and read on A.
 * argv[2] = "svm" runs step (2) only, "image" step (1) only. Prints "ok" per step and
 * "QUIRK REPRODUCED" never (a crash is the reproduction: the last "step" line names it).
 *
 *   gcc -O1 -o /tmp/twogpu repro/nvidia_two_gpu_image_svm.c -lOpenCL
 *   /tmp/twogpu NVIDIA [image|svm] */
#include "common.h"

#define STEP(...) do { printf("step: " __VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

static const char *SRC = "__kernel void add(__global uint *a, uint v) { a[get_global_id(0)] += v; }";

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    cl_platform_id p; cl_device_id first; char name[256];
    if (!pick(argc, argv, &p, &first, name, sizeof name)) return 1;
    const char *only = argc > 2 ? argv[2] : "";
    cl_device_id devs[8]; cl_uint n = 0;
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 8, devs, &n));
    printf("%u GPU(s)\n", n);
    if (n < 2) { printf("needs two GPUs of one platform: nothing run\n"); return 0; }
    cl_int err;
    STEP("clCreateContext(2 GPUs)");
    cl_context ctx = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    if (err) { printf("clCreateContext -> %d\n", err); return 1; }
    cl_command_queue a = clCreateCommandQueueWithProperties(ctx, devs[0], NULL, &err);
    cl_command_queue b = clCreateCommandQueueWithProperties(ctx, devs[1], NULL, &err);

    if (strcmp(only, "svm") != 0) {
        cl_image_format fmt = {CL_R, CL_UNSIGNED_INT32};
        cl_image_desc desc = {0};
        desc.image_type = CL_MEM_OBJECT_IMAGE2D; desc.image_width = 8; desc.image_height = 4;
        STEP("clCreateImage(8x4 R/UINT32)");
        cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
        if (err) { printf("clCreateImage -> %d\n", err); return 1; }
        cl_uint data[32], back[32];
        for (int i = 0; i < 32; i++) { data[i] = i; back[i] = 0; }
        size_t origin[3] = {0, 0, 0}, region[3] = {8, 4, 1};
        cl_event w;
        STEP("clEnqueueWriteImage on A (non-blocking) + clFlush(A)");
        CHECK(clEnqueueWriteImage(a, img, CL_FALSE, origin, region, 0, 0, data, 0, NULL, &w));
        CHECK(clFlush(a));
        STEP("clEnqueueReadImage on B (blocking, waiting for A's write event)");
        CHECK(clEnqueueReadImage(b, img, CL_TRUE, origin, region, 0, 0, back, 1, &w, NULL));
        printf("image: %s\n", memcmp(data, back, sizeof data) ? "WRONG DATA" : "ok");
        clReleaseEvent(w);
        clReleaseMemObject(img);
    }

    if (strcmp(only, "image") != 0) {
        STEP("clSVMAlloc(coarse, 256 bytes, alignment 4)");
        cl_uint *s = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 64 * sizeof(cl_uint), 4);
        if (!s) { printf("clSVMAlloc -> NULL\n"); return 1; }
        STEP("clEnqueueSVMMap on A (blocking, write)");
        CHECK(clEnqueueSVMMap(a, CL_TRUE, CL_MAP_WRITE, s, 64 * sizeof(cl_uint), 0, NULL, NULL));
        for (int i = 0; i < 64; i++) s[i] = i;
        cl_event u;
        STEP("clEnqueueSVMUnmap on A + clFlush(A)");
        CHECK(clEnqueueSVMUnmap(a, s, 0, NULL, &u));
        CHECK(clFlush(a));
        STEP("clBuildProgram (both devices)");
        cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
        CHECK(clBuildProgram(prog, 0, NULL, "", NULL, NULL));
        cl_kernel k = clCreateKernel(prog, "add", &err);
        cl_uint five = 5;
        STEP("clSetKernelArgSVMPointer + clSetKernelArg");
        CHECK(clSetKernelArgSVMPointer(k, 0, s));
        CHECK(clSetKernelArg(k, 1, sizeof five, &five));
        size_t global = 64;
        cl_event kev;
        STEP("clEnqueueNDRangeKernel on B (waiting for A's unmap event) + clFinish(B)");
        CHECK(clEnqueueNDRangeKernel(b, k, 1, NULL, &global, NULL, 1, &u, &kev));
        CHECK(clFinish(b));
        STEP("clEnqueueSVMMap on A (blocking, read, waiting for B's kernel event)");
        CHECK(clEnqueueSVMMap(a, CL_TRUE, CL_MAP_READ, s, 64 * sizeof(cl_uint), 1, &kev, NULL));
        int good = 1;
        for (int i = 0; i < 64; i++) good &= s[i] == (cl_uint)(i + 5);
        printf("svm: %s\n", good ? "ok" : "WRONG DATA");
        STEP("clEnqueueSVMUnmap on A + clFinish(A)");
        CHECK(clEnqueueSVMUnmap(a, s, 0, NULL, NULL));
        CHECK(clFinish(a));
        STEP("clSVMFree");
        clSVMFree(ctx, s);
        clReleaseEvent(u); clReleaseEvent(kev);
        clReleaseKernel(k); clReleaseProgram(prog);
    }
    clReleaseCommandQueue(a); clReleaseCommandQueue(b);
    clReleaseContext(ctx);
    printf("done\n");
    return 0;
}
