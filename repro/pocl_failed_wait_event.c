/* PoCL 3.1 and the Intel CPU runtime, a command enqueued after an event that already failed:
 *  - PoCL: a blocking clEnqueueWriteBuffer never returns, and clWaitForEvents on a non-blocking
 *    one never returns (the spec: the blocking call returns
 *    CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, the command terminates with an error);
 *  - Intel: the blocking call returns CL_SUCCESS having written nothing.
 * And a command whose wait-list event fails after it was enqueued: PoCL reads its status as an
 * error but never calls its CL_COMPLETE callback.
 * cl-mem refuses the first case before the driver (checked_list) and watches futures on PoCL.
 *
 *   gcc -O1 -o /tmp/failed_wait repro/pocl_failed_wait_event.c -lOpenCL
 *   /tmp/failed_wait <platform-substring>    (prints QUIRK REPRODUCED for each quirk seen)
 */
#include "common.h"
#include <signal.h>
#include <unistd.h>

static const char *stage = "";
static void on_alarm(int sig) {
    (void)sig;
    printf("QUIRK REPRODUCED: %s did not return within 5 s\n", stage);
    fflush(stdout);
    _exit(0);
}

static volatile int called = 0;
static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *data) {
    (void)e; (void)data;
    called = 1;
    printf("callback called with status %d\n", status);
}

int main(int argc, char **argv) {
    cl_platform_id p;
    cl_device_id d;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    signal(SIGALRM, on_alarm);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    static char zeros[64], ones[64], back[64];
    memset(ones, 1, sizeof ones);
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, 64, zeros, 0, NULL, NULL));

    /* 3: the callback of a command whose dependency fails later (checked first: 1 and 2 may hang). */
    cl_event later = clCreateUserEvent(ctx, &err);
    cl_event r;
    CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 64, back, 1, &later, &r));
    CHECK(clSetEventCallback(r, CL_COMPLETE, on_complete, NULL));
    CHECK(clFlush(q));
    CHECK(clSetUserEventStatus(later, CL_OUT_OF_RESOURCES));
    cl_int st = 0;
    for (int i = 0; i < 200 && !called; i++) usleep(10000);
    clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (!called)
        printf("QUIRK REPRODUCED: no CL_COMPLETE callback within 2 s for a command whose wait-list event failed (status %d)\n", st);
    else
        printf("the callback came (status %d)\n", st);

    /* 1: blocking write after an already failed event. */
    cl_event failed = clCreateUserEvent(ctx, &err);
    CHECK(clSetUserEventStatus(failed, CL_OUT_OF_RESOURCES));
    stage = "a blocking clEnqueueWriteBuffer after a failed event";
    alarm(5);
    err = clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, 64, ones, 1, &failed, NULL);
    alarm(0);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, 64, back, 0, NULL, NULL));
    printf("blocking write after a failed event returned %d; buffer byte 0 is %d\n", err, back[0]);
    if (err == CL_SUCCESS && back[0] == 0)
        printf("QUIRK REPRODUCED: CL_SUCCESS from a blocking write that wrote nothing\n");

    /* 2: non-blocking write after an already failed event, then wait. */
    cl_event w;
    err = clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, 64, ones, 1, &failed, &w);
    printf("non-blocking write after a failed event: %d\n", err);
    if (err == CL_SUCCESS) {
        stage = "clWaitForEvents on a write enqueued after a failed event";
        alarm(5);
        err = clWaitForEvents(1, &w);
        alarm(0);
        printf("clWaitForEvents -> %d\n", err);
    }
    printf("done\n");
    return 0;
}
