/* PoCL 3.1 (Debian pocl-opencl-icd 3.1-3+deb12u1, CPU device): clEnqueueCopyBufferRect with a
 * sub-buffer as source or destination crashes (SIGSEGV inside the driver), while
 * clEnqueueReadBufferRect / clEnqueueWriteBufferRect on the same sub-buffer work, and the same
 * rectangle copied between the root buffers at shifted origins gives the right bytes.
 * Also seen on PoCL 5.0+debian (the GPU machine). cl-mem copies such rectangles between the roots
 * on PoCL
 * (docs/DEVICES.md#pocl-copy-rect-sub-buffer).
 *
 *   gcc -O1 -o /tmp/rectsub repro/pocl_copy_rect_sub_buffer.c -lOpenCL
 *   /tmp/rectsub <platform-substring> [root]
 */
#include "common.h"
#include <string.h>

int main(int argc, char **argv) {
    cl_platform_id p;
    cl_device_id d;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    int use_root = argc > 2 && strcmp(argv[2], "root") == 0;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
    cl_uint align_bits = 0;
    clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    size_t off = align_bits / 8, n = 4096;
    unsigned char host[4096];
    for (size_t i = 0; i < n; i++) host[i] = (unsigned char)i;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, host, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
    cl_buffer_region r = {off, 1024};
    cl_mem sub = clCreateSubBuffer(a, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    printf("%s: sub-buffer at %zu: %d\n", name, off, err);
    size_t zero[3] = {0, 0, 0}, region[3] = {16, 4, 1};
    err = clEnqueueReadBufferRect(q, sub, CL_TRUE, zero, zero, region, 32, 0, 16, 0, host, 0, NULL, NULL);
    printf("clEnqueueReadBufferRect(sub) = %d, byte 0 = %u (want %u)\n", err, host[0], (unsigned)(off & 255));
    if (use_root) {
        size_t src_origin[3] = {off, 0, 0};
        err = clEnqueueCopyBufferRect(q, a, b, src_origin, zero, region, 32, 0, 16, 0, 0, NULL, NULL);
        printf("clEnqueueCopyBufferRect(root at %zu) = %d\n", off, err);
    } else {
        fflush(stdout);
        err = clEnqueueCopyBufferRect(q, sub, b, zero, zero, region, 32, 0, 16, 0, 0, NULL, NULL);
        printf("clEnqueueCopyBufferRect(sub) = %d\n", err);
    }
    clFinish(q);
    err = clEnqueueReadBuffer(q, b, CL_TRUE, 0, 64, host, 0, NULL, NULL);
    printf("copied row 1 byte 0 = %u (want %u)\n", host[16], (unsigned)((off + 32) & 255));
    clReleaseMemObject(sub);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
