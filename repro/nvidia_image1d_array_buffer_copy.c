/* NVIDIA 580.159.04: clEnqueueCopyImageToBuffer and clEnqueueCopyBufferToImage return
 * CL_INVALID_VALUE for a 1-D image array (2-D images copy fine). */
#include "common.h"

static cl_int try_type(cl_context ctx, cl_command_queue q, cl_mem_object_type t, size_t h, size_t layers, cl_int *back) {
    cl_int err;
    cl_image_format f = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = t;
    desc.image_width = 4;
    desc.image_height = h;
    desc.image_array_size = layers;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &desc, NULL, &err);
    if (err) return err;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * 16 * 4, NULL, &err);
    size_t o[3] = {0, 0, 0};
    size_t r[3] = {4, t == CL_MEM_OBJECT_IMAGE1D_ARRAY ? layers : h, 1};
    cl_int to = clEnqueueCopyImageToBuffer(q, img, buf, o, r, 0, 0, NULL, NULL);
    *back = clEnqueueCopyBufferToImage(q, buf, img, 0, o, r, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(buf);
    clReleaseMemObject(img);
    return to;
}

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_int b2 = 0, b1a = 0;
    cl_int i2 = try_type(ctx, q, CL_MEM_OBJECT_IMAGE2D, 2, 1, &b2);
    cl_int i1a = try_type(ctx, q, CL_MEM_OBJECT_IMAGE1D_ARRAY, 1, 2, &b1a);
    printf("2-D image: to buffer %d, from buffer %d; 1-D array: to buffer %d, from buffer %d\n%s\n", i2, b2, i1a, b1a,
           i1a == CL_SUCCESS && b1a == CL_SUCCESS ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
