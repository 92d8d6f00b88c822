/* NVIDIA 580.159.04 (H100): clReleaseContext hangs (the main thread waits on a lock inside
 * libnvidia-opencl, glibc prints "The futex facility returned an unexpected error code.") after
 * many contexts that each had a clSetContextDestructorCallback registered, as the device test
 * harness does to check that every context a test made is destroyed (issue 16). Seen twice
 * on 2026-11-25, in different tests (a plain buffer write/read; a user event set to an error).
 * This program does what those tests do, ROUNDS times, with a watchdog: it prints
 * "QUIRK REPRODUCED" when a round makes no progress for 10 s, else "no hang".
 * argv[2] = "nocb" runs the same rounds without destructor callbacks.
 *
 *   gcc -O1 -pthread -o /tmp/ctxcb repro/nvidia_context_destructor_release_hang.c -lOpenCL
 *   /tmp/ctxcb NVIDIA [nocb] */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

#define ROUNDS 400

static volatile int progress = 0;
static volatile int destroyed = 0;
static volatile int stage = 0;

static void CL_CALLBACK on_destroy(cl_context c, void *user) { (void)c; (void)user; destroyed++; }
static void CL_CALLBACK on_event(cl_event e, cl_int s, void *user) { (void)e; (void)s; (void)user; }

static void *watchdog(void *arg) {
    (void)arg;
    int last = -1;
    for (;;) {
        sleep(10);
        if (progress == last) {
            printf("QUIRK REPRODUCED: round %d made no progress for 10 s (stage %d: %s)\n", progress, stage,
                   stage == 9 ? "clReleaseContext" : "another call");
            fflush(stdout);
            _exit(0);
        }
        last = progress;
    }
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256];
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 1;
    int with_cb = !(argc > 2 && strcmp(argv[2], "nocb") == 0);
    printf("%d rounds, destructor callbacks %s\n", ROUNDS, with_cb ? "on" : "off");
    pthread_t w; pthread_create(&w, NULL, watchdog, NULL);
    unsigned char data[256], back[256];
    for (int i = 0; i < 256; i++) data[i] = (unsigned char)i;
    for (int r = 0; r < ROUNDS; r++) {
        cl_int err;
        stage = 1; cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
        if (err) { printf("clCreateContext %d\n", err); return 1; }
        if (with_cb) { stage = 2; CHECK(clSetContextDestructorCallback(ctx, on_destroy, NULL)); }
        stage = 3; cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
        stage = 4; cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256, NULL, &err);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, 256, data, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, 256, back, 0, NULL, NULL));
        if (r % 2) {
            stage = 5; cl_event u = clCreateUserEvent(ctx, &err);
            CHECK(clSetEventCallback(u, CL_COMPLETE, on_event, NULL));
            cl_event m;
            CHECK(clEnqueueMarkerWithWaitList(q, 1, &u, &m));
            CHECK(clSetUserEventStatus(u, -1));
            clWaitForEvents(1, &m);
            clReleaseEvent(m); clReleaseEvent(u);
        }
        stage = 6; clFinish(q);
        stage = 7; clReleaseMemObject(b);
        stage = 8; clReleaseCommandQueue(q);
        stage = 9; clReleaseContext(ctx);
        progress = r + 1;
    }
    usleep(200000);
    printf("no hang: %d rounds, %d destructor callbacks ran\n", ROUNDS, destroyed);
    return 0;
}
