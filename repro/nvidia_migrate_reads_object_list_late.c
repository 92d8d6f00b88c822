/* NVIDIA 580.159.04: clEnqueueMigrateMemObjects reads its `mem_objects` array after the call has
 * returned (when its worker thread runs the command), so an array the caller reuses or frees
 * right after the call -- a stack array, as cl-mem passed -- makes the driver's thread dereference
 * whatever is there next (SIGSEGV at address 0x9 in pools::threads_share_a_device_pool). The spec
 * gives the array to the call only; PoCL and the Intel runtime copy it.
 *
 * Each case runs in a fresh child process (a crash is the symptom; the program runs itself again
 * with `case <n> <scribble>`, since a forked OpenCL process has no driver threads): the command
 * waits on a user event,
 * the array is overwritten with (handle)1 right after the enqueue returns, then the event is set
 * complete and the queue finished. Controls keep the array intact. Other list arguments are
 * checked the same way: the migration's own event wait list, a marker's wait list,
 * clEnqueueSVMMigrateMem's pointers and sizes, clEnqueueSVMFree's pointers (these four only for
 * a crash), a fill pattern, a rectangle's origins and region and NDRange work sizes (these three
 * by the data the command wrote). One more case keeps the list but releases the object right
 * after the call: does the driver hold the object from the call on? A failed call ends a case
 * as "a call failed", a hang after 30 s as SIGALRM. Prints one line per case and
 * "QUIRK REPRODUCED" when a changed case dies or writes other data while its control passes.
 *
 *   gcc -O1 -o /tmp/mig repro/nvidia_migrate_reads_object_list_late.c -lOpenCL && /tmp/mig NVIDIA */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static cl_platform_id plat;
static cl_device_id dev;

/* A failed call ends the case with status 5 (not "ok"). */
#define MUST(call)                                                                    \
    do {                                                                              \
        cl_int err_ = (call);                                                         \
        if (err_ != CL_SUCCESS) { printf("    %s -> %d\n", #call, err_); exit(5); }  \
    } while (0)
#undef CHECK
#define CHECK MUST

enum { MIGRATE, MIGRATE_WAIT_LIST, MIGRATE_RELEASED, WAIT_LIST, SVM_MIGRATE, SVM_FREE, FILL_PATTERN, RECT_REGION, NDRANGE_SIZES, LAST = NDRANGE_SIZES };
/* Whether a case checks the data its command produced (otherwise only that the process lives). */
static const int data_checked[] = {0, 0, 0, 0, 0, 0, 1, 1, 1};
static const char *names[] = {"clEnqueueMigrateMemObjects mem_objects",
                              "clEnqueueMigrateMemObjects event_wait_list",
                              "clEnqueueMigrateMemObjects, the object released after the call (list kept)",
                              "clEnqueueMarkerWithWaitList event_wait_list",
                              "clEnqueueSVMMigrateMem svm_pointers and sizes",
                              "clEnqueueSVMFree svm_pointers",
                              "clEnqueueFillBuffer pattern",
                              "clEnqueueWriteBufferRect origins and region",
                              "clEnqueueNDRangeKernel work sizes"};

static const char *src = "kernel void k(global int *a) { a[get_global_id(0)] = 7; }";

/* Runs one case 5 times in this (child) process; exit 0 when every call returned and finished
 * with the data the call was given, 4 when the data show the overwritten array, 3 when the case
 * does not apply (no SVM). */
static int run_case(int which, int scribble) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    if (err) { printf("    queue: %d\n", err); return 1; }
    cl_device_svm_capabilities svm = 0;
    clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
    if ((which == SVM_MIGRATE || which == SVM_FREE) && !(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) return 3;
    for (int round = 0; round < 5; round++) {
        cl_event gate = clCreateUserEvent(ctx, &err);
        cl_event ev = NULL;
        if (which == MIGRATE_WAIT_LIST) {
            cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
            cl_event other;
            CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &other));
            cl_event *wl = malloc(2 * sizeof *wl);
            wl[0] = gate;
            wl[1] = other;
            CHECK(clEnqueueMigrateMemObjects(q, 1, &b, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 2, wl, &ev));
            if (scribble) wl[0] = wl[1] = (cl_event)1;
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            clReleaseEvent(other);
            clReleaseMemObject(b);
            free(wl);
        } else if (which == MIGRATE_RELEASED) {
            /* The list stays valid; with `scribble` the object is released right after the call
             * (the spec: released objects stay until the commands using them finished). */
            cl_mem *list = malloc(sizeof *list);
            list[0] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
            CHECK(clEnqueueMigrateMemObjects(q, 1, list, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 1, &gate, &ev));
            if (scribble) clReleaseMemObject(list[0]);
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            if (!scribble) clReleaseMemObject(list[0]);
            free(list);
        } else if (which == MIGRATE) {
            cl_mem *list = malloc(sizeof *list);
            list[0] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
            cl_mem keep = list[0];
            CHECK(clEnqueueMigrateMemObjects(q, 1, list, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 1, &gate, &ev));
            if (scribble) list[0] = (cl_mem)1;
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            clReleaseMemObject(keep);
            free(list);
        } else if (which == WAIT_LIST) {
            cl_event *list = malloc(2 * sizeof *list);
            cl_event other;
            CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &other));
            list[0] = gate;
            list[1] = other;
            CHECK(clEnqueueMarkerWithWaitList(q, 2, list, &ev));
            if (scribble) list[0] = list[1] = (cl_event)1;
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            clReleaseEvent(other);
            free(list);
        } else if (which == SVM_MIGRATE) {
            void *p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);
            const void **ptrs = malloc(sizeof *ptrs);
            size_t *sizes = malloc(sizeof *sizes);
            ptrs[0] = p;
            sizes[0] = 4096;
            CHECK(clEnqueueSVMMigrateMem(q, 1, ptrs, sizes, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 1, &gate, &ev));
            if (scribble) { ptrs[0] = (void *)1; sizes[0] = (size_t)-1; }
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            clSVMFree(ctx, p);
            free(ptrs);
            free(sizes);
        } else if (which == FILL_PATTERN || which == RECT_REGION || which == NDRANGE_SIZES) {
            int *back = calloc(64, sizeof(int));
            cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &err);
            int zero = 0;
            CHECK(clEnqueueFillBuffer(q, b, &zero, sizeof zero, 0, 64 * sizeof(int), 0, NULL, NULL));
            CHECK(clFinish(q));
            if (which == FILL_PATTERN) {
                int *pattern = malloc(sizeof *pattern);
                *pattern = 7;
                CHECK(clEnqueueFillBuffer(q, b, pattern, sizeof *pattern, 0, 64 * sizeof(int), 1, &gate, &ev));
                if (scribble) *pattern = 9;
                CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
                CHECK(clFinish(q));
                free(pattern);
            } else if (which == RECT_REGION) {
                int src_host[64];
                for (int i = 0; i < 64; i++) src_host[i] = 7;
                size_t *a = malloc(9 * sizeof *a); /* buffer origin, host origin, region */
                memset(a, 0, 9 * sizeof *a);
                a[6] = 64 * sizeof(int); a[7] = 1; a[8] = 1;
                CHECK(clEnqueueWriteBufferRect(q, b, CL_FALSE, a, a + 3, a + 6, 0, 0, 0, 0, src_host, 1, &gate, &ev));
                if (scribble) { a[0] = 1u << 30; a[6] = 1u << 30; a[7] = 1u << 20; }
                CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
                CHECK(clFinish(q));
                free(a);
            } else {
                cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
                CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
                cl_kernel k = clCreateKernel(prog, "k", &err);
                CHECK(clSetKernelArg(k, 0, sizeof b, &b));
                size_t *g = malloc(sizeof *g);
                *g = 64;
                CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, g, NULL, 1, &gate, &ev));
                if (scribble) *g = 1;
                CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
                CHECK(clFinish(q));
                free(g);
                clReleaseKernel(k);
                clReleaseProgram(prog);
            }
            CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, 64 * sizeof(int), back, 0, NULL, NULL));
            int bad = 0;
            for (int i = 0; i < 64; i++) bad |= back[i] != 7;
            clReleaseMemObject(b);
            free(back);
            if (bad) { printf("    contents differ from what the call was given\n"); return 4; }
        } else {
            void **ptrs = malloc(sizeof *ptrs);
            ptrs[0] = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);
            CHECK(clEnqueueSVMFree(q, 1, ptrs, NULL, NULL, 1, &gate, &ev));
            if (scribble) ptrs[0] = (void *)1;
            CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
            CHECK(clFinish(q));
            free(ptrs);
        }
        if (ev) clReleaseEvent(ev);
        clReleaseEvent(gate);
    }
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}

static char **args;

/* The case in a child: 0 survived, 3 not applicable, 4 wrong data, 5 a call failed, otherwise the
 * signal that killed it (+100; SIGALRM after 30 s is a hang). */
static int in_child(int which, int scribble) {
    char w[8], s[8];
    snprintf(w, sizeof w, "%d", which);
    snprintf(s, sizeof s, "%d", scribble);
    char *child[] = {args[0], args[1], "case", w, s, NULL};
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", child);
        _exit(1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) return 100 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

int main(int argc, char **argv) {
    char name[256] = {0};
    if (argc > 4 && !strcmp(argv[2], "case")) {
        alarm(30);
        if (!pick(argc, argv, &plat, &dev, name, sizeof name)) return 2;
        return run_case(atoi(argv[3]), atoi(argv[4]));
    }
    if (argc < 2) { printf("usage: %s <platform name part>\n", argv[0]); return 2; }
    args = argv;
    if (!pick(argc, argv, &plat, &dev, name, sizeof name)) return 2;
    int reproduced = 0;
    for (int which = MIGRATE; which <= LAST; which++) {
        int control = in_child(which, 0);
        if (control == 3) { printf("%s: no coarse-grain SVM, skipped\n", names[which]); continue; }
        int scribbled = in_child(which, 1);
        const char *survived = which == MIGRATE_RELEASED ? "ok (the object stays until the command ran)"
                               : data_checked[which] ? "ok (data as given: copied at the call)"
                                                     : "no crash (not read late, or read harmlessly)";
        printf("%s: control %s; %s %s\n", names[which],
               control == 0 ? "ok" : control > 100 ? "killed" : "failed",
               which == MIGRATE_RELEASED ? "released after the call:" : "array overwritten after the call:",
               scribbled == 0 ? survived : scribbled > 100 ? "killed (read after the call)"
               : scribbled == 4 ? "wrong data (read after the call)" : "a call failed");
        if (scribbled > 100) printf("    signal %d\n", scribbled - 100);
        if (control == 0 && (scribbled > 100 || scribbled == 4)) reproduced = 1;
    }
    printf("%s\n", reproduced ? "QUIRK REPRODUCED" : "spec behaviour");
    return 0;
}
