/* NVIDIA 580.159.04 (H100): clSVMAlloc returned NULL for 1024 bytes, alignment 4, in the first
 * round of the soak test (four host threads allocating coarse-grain SVM on one context at once;
 * 2026-11-25), where one thread's allocations of the same size succeed. THREADS threads each
 * allocate and free ROUNDS times (argv[2] = "queue": freed with clEnqueueSVMFree on the thread's
 * own queue, as cl-mem does). Prints "QUIRK REPRODUCED" with the first NULL, else "no NULL".
 *
 *   gcc -O1 -pthread -o /tmp/svmthr repro/nvidia_concurrent_svm_alloc.c -lOpenCL
 *   /tmp/svmthr NVIDIA [queue] */
#include "common.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 2000

static cl_context ctx;
static cl_device_id dev;
static int use_queue;
static volatile int nulls = 0;

static void *worker(void *arg) {
    long t = (long)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    for (int r = 0; r < ROUNDS; r++) {
        void *p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 1024, 4);
        if (!p) {
            if (__sync_fetch_and_add(&nulls, 1) == 0)
                printf("QUIRK REPRODUCED: clSVMAlloc(1024, alignment 4) returned NULL in thread %ld, round %d\n", t, r);
            continue;
        }
        if (use_queue) {
            CHECK(clEnqueueSVMFree(q, 1, &p, NULL, NULL, 0, NULL, NULL));
            if (r % 64 == 0) clFinish(q);
        } else {
            clSVMFree(ctx, p);
        }
    }
    clFinish(q);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p; char name[256];
    if (!pick(argc, argv, &p, &dev, name, sizeof name)) return 1;
    use_queue = argc > 2 && strcmp(argv[2], "queue") == 0;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    void *one = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 1024, 4);
    printf("one thread: clSVMAlloc(1024, 4) = %s\n", one ? "a pointer" : "NULL");
    if (one) clSVMFree(ctx, one);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    printf("%d threads x %d rounds (%s): %d NULL returns%s\n", THREADS, ROUNDS,
           use_queue ? "clEnqueueSVMFree" : "clSVMFree", nulls, nulls ? "" : ": no NULL");
    clReleaseContext(ctx);
    return 0;
}
