/* NVIDIA 580.159.04 (H100): the soak test (issue 16) failed in its second round with
 * clEnqueueNDRangeKernel -> CL_INVALID_KERNEL_ARGS, both arguments set: four host threads, each
 * with its own queue and its own kernel object created from one shared program, setting a buffer
 * and a uint argument and enqueueing (2026-11-25). This program does the same without the
 * workspace; it prints "QUIRK REPRODUCED" with the first failing call, else "no error".
 *
 *   gcc -O1 -pthread -o /tmp/kargs repro/nvidia_threads_kernel_args.c -lOpenCL
 *   /tmp/kargs NVIDIA */
#include "common.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 3000

static const char *src =
    "__kernel void transform(__global uint* p, uint seed) { size_t i = get_global_id(0); p[i] = p[i] * 3u + seed; }";
static cl_context ctx;
static cl_device_id dev;
static cl_program prog;
static volatile int errors = 0;

static void *worker(void *arg) {
    long t = (long)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    cl_kernel k = clCreateKernel(prog, "transform", &err);
    if (err) { printf("thread %ld: clCreateKernel %d\n", t, err); return NULL; }
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = 256 + 64 * (r % 7);
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
        cl_uint seed = (cl_uint)(t * 1000003 + r);
        cl_int e1 = clSetKernelArg(k, 0, sizeof b, &b);
        cl_int e2 = clSetKernelArg(k, 1, sizeof seed, &seed);
        cl_int e3 = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
        if ((e1 || e2 || e3) && __sync_fetch_and_add(&errors, 1) == 0)
            printf("QUIRK REPRODUCED: thread %ld round %d: clSetKernelArg %d / %d, clEnqueueNDRangeKernel %d\n",
                   t, r, e1, e2, e3);
        if (r % 16 == 0) clFinish(q);
        clReleaseMemObject(b);
    }
    clFinish(q);
    clReleaseKernel(k);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p; char name[256];
    if (!pick(argc, argv, &p, &dev, name, sizeof name)) return 1;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(clBuildProgram(prog, 1, &dev, "-cl-kernel-arg-info", NULL, NULL));
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    printf("%d threads x %d rounds: %d failing rounds%s\n", THREADS, ROUNDS, errors, errors ? "" : ": no error");
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    return 0;
}
