/* PoCL 3.1 never destroys a context in which a CL_MEM_OBJECT_IMAGE1D_BUFFER image was created: its
 * clSetContextDestructorCallback callback does not run after the image, its buffer, the queue and the
 * context were released (every other image type, mapped or not, lets it run).
 *
 *   gcc -O1 -o /tmp/imgctx repro/pocl_image1d_buffer_keeps_context.c -lOpenCL && /tmp/imgctx Portable
 */
#include "common.h"
#include <time.h>
static void CL_CALLBACK gone(cl_context c, void *u) { *(int *)u = 1; }
int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_mem_object_type types[] = {CL_MEM_OBJECT_IMAGE1D, CL_MEM_OBJECT_IMAGE1D_BUFFER, CL_MEM_OBJECT_IMAGE2D, CL_MEM_OBJECT_IMAGE3D, CL_MEM_OBJECT_IMAGE1D_ARRAY, CL_MEM_OBJECT_IMAGE2D_ARRAY};
    for (int t = 0; t < 6; t++) for (int map = 0; map < 2; map++) {
        cl_int err; int flag = 0;
        cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
        CHECK(clSetContextDestructorCallback(ctx, gone, &flag));
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
        cl_image_format fmt = {CL_RGBA, CL_FLOAT};
        cl_image_desc desc; memset(&desc, 0, sizeof desc);
        desc.image_type = types[t]; desc.image_width = 4; desc.image_height = 2; desc.image_depth = 2; desc.image_array_size = 2;
        if (t == 1) desc.buffer = buf;
        cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
        if (err) printf("create %d -> %d\n", t, err);
        if (map) {
            size_t o[3] = {0, 0, 0}, r[3] = {4, 1, 1}, rp, sp;
            void *ptr = clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ, o, r, &rp, &sp, 0, NULL, NULL, &err);
            if (err) printf("map -> %d\n", err);
            CHECK(clEnqueueUnmapMemObject(q, img, ptr, 0, NULL, NULL));
            clFinish(q);
        }
        clReleaseMemObject(img); clReleaseMemObject(buf);
        clReleaseCommandQueue(q);
        clReleaseContext(ctx);
        for (int i = 0; i < 100 && !flag; i++) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        printf("%s: image type %#x%s: destructor callback %s\n", name, types[t], map ? " mapped" : "", flag ? "ran" : "NOT RUN after 1 s");
    }
    return 0;
}
