/* PoCL 3.1 (Debian pocl-opencl-icd 3.1-3+deb12u1, CPU device): clEnqueueFillImage on a
 * CL_MEM_OBJECT_IMAGE1D_BUFFER image (RGBA/FLOAT over a 64-byte buffer) crashes the process
 * (SIGSEGV) once the command runs. The Intel CPU runtime and Oclgrind fill the image.
 *
 *   gcc -O1 -o /tmp/fill1db repro/pocl_fill_image1d_buffer_crash.c -lOpenCL
 *   /tmp/fill1db <platform-substring>
 */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p;
    cl_device_id d;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    {
        cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
        cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
        float init[16];
        for (int k = 0; k < 16; k++) init[k] = 1.0f;
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
        cl_image_format fmt = {CL_RGBA, CL_FLOAT};
        cl_image_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
        desc.image_width = 4;
        desc.buffer = buf;
        cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
        printf("%s: clCreateImage(IMAGE1D_BUFFER) = %d\n", name, err);
        fflush(stdout);
        float color[4] = {2, 2, 2, 2};
        size_t origin[3] = {0, 0, 0}, region[3] = {4, 1, 1};
        err = clEnqueueFillImage(q, img, color, origin, region, 0, NULL, NULL);
        printf("%s: clEnqueueFillImage = %d\n", name, err);
        fflush(stdout);
        err = clFinish(q);
        float out[16] = {0};
        clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
        printf("%s: clFinish = %d, buffer[0] = %g (2 expected)\n", name, err, out[0]);
        clReleaseMemObject(img);
        clReleaseMemObject(buf);
        clReleaseCommandQueue(q);
        clReleaseContext(ctx);
    }
    return 0;
}
