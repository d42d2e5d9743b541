/* transport.c: the GPU side of the exchanges (see transport.h), on gpu/'s packs and NCCL and
 * the backend's device memory. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "tide_config.h"
#include "comm/transport.h"
#include "backend/device.h"
#include "backend/memory.h"
#include "gpu/nccl.h"
#include "gpu/pack.h"
#if TIDE_HAVE_MPI_EXT
#include <mpi-ext.h> /* MPIX_Query_cuda_support, where the MPI library has it */
#endif

int tide_transport_pack(size_t elem, int batch, const tide_box *region, const void *src,
                        const tide_box *sbox, void *dst, const tide_box *dbox, void *stream)
{
    return tide_gpu_copy_region_async(elem, batch, region, src, sbox, dst, dbox, stream);
}

int tide_transport_store(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox, int dst_device,
                         void *stream)
{
    return tide_gpu_store_region_async(elem, batch, region, src, sbox, dst, dbox, dst_device,
                                       stream);
}

int tide_transport_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    return tide_gpu_memcpy_async(dst, src, bytes, stream);
}

int tide_transport_sync(void *stream) { return tide_gpu_sync(stream); }

void *tide_transport_stage_alloc(int on_device, size_t bytes)
{
    void *p = NULL;
    int st = on_device ? tide_gpu_malloc(bytes + 1, &p) : tide_gpu_host_alloc(bytes + 1, &p);
    return st ? NULL : p;
}

void tide_transport_stage_free(int on_device, void *p)
{
    if (!p)
        return;
    if (on_device)
        tide_gpu_free(p);
    else
        tide_gpu_host_free(p);
}

/* ---- direct stores (CUDA IPC) ---------------------------------------------------------- */

_Static_assert((int)TIDE_TRANSPORT_IPC_BYTES == (int)TIDE_GPU_IPC_BYTES, "one size of IPC handles");

/* The peers' staging this process has mapped: CUDA maps a handle once per process, so every
 * exchange that opens it shares the mapping, released with the last close. */
typedef struct mapping {
    unsigned char handle[TIDE_TRANSPORT_IPC_BYTES];
    void *base;
    int device; /* the GPU that holds it */
    int opens;
    struct mapping *next;
} mapping;
static mapping *mappings;
static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;

int tide_transport_ipc_mem_handle(const void *p, void *handle, size_t *offset)
{
    return tide_gpu_ipc_mem_handle(p, handle, offset);
}

int tide_transport_ipc_mem_open(const void *handle, void **base, int *device)
{
    pthread_mutex_lock(&mappings_lock);
    mapping *m = mappings;
    while (m && memcmp(m->handle, handle, sizeof m->handle))
        m = m->next;
    int st = TIDE_SUCCESS;
    if (!m) {
        m = calloc(1, sizeof *m);
        st = !m ? TIDE_ERR_NOMEM : tide_gpu_ipc_mem_open(handle, &m->base, &m->device);
        if (!st) {
            memcpy(m->handle, handle, sizeof m->handle);
            m->next = mappings, mappings = m;
        } else {
            free(m);
            m = NULL;
        }
    }
    if (m)
        m->opens++;
    *base = m ? m->base : NULL;
    *device = m ? m->device : -1;
    pthread_mutex_unlock(&mappings_lock);
    return st;
}

void tide_transport_ipc_mem_close(void *base)
{
    if (!base)
        return;
    pthread_mutex_lock(&mappings_lock);
    mapping **at = &mappings;
    while (*at && (*at)->base != base)
        at = &(*at)->next;
    mapping *m = *at;
    if (m && --m->opens == 0) {
        *at = m->next;
        tide_gpu_ipc_mem_close(m->base);
        free(m);
    }
    pthread_mutex_unlock(&mappings_lock);
}

int tide_transport_ipc_event_create(void **event, void *handle)
{
    return tide_gpu_ipc_event_create(event, handle);
}

int tide_transport_ipc_event_open(const void *handle, void **event)
{
    return tide_gpu_ipc_event_open(handle, event);
}

int tide_transport_fail(const char *what, const char *why)
{
    return tide_gpu_note_error(what, why, TIDE_ERR_BACKEND);
}

int tide_transport_event_create(void **event) { return tide_gpu_event_create(event); }
void tide_transport_event_destroy(void *event) { tide_gpu_event_destroy(event); }
int tide_transport_record(void *event, void *stream)
{
    return tide_gpu_event_record(event, stream);
}
int tide_transport_wait(void *stream, void *event) { return tide_gpu_stream_wait(stream, event); }

/* ---- NCCL ------------------------------------------------------------------------------ */

int tide_transport_nccl_version(void) { return tide_nccl_version(); }

int tide_transport_nccl_create(MPI_Comm comm, int max_ctas, void **nccl, char *why,
                               size_t len)
{
    tide_nccl *c = NULL;
    int st = tide_nccl_create(comm, max_ctas, &c, why, len);
    *nccl = c;
    return st;
}

void tide_transport_nccl_destroy(void *nccl) { tide_nccl_destroy(nccl); }

int tide_transport_group_start(void) { return tide_nccl_group_start(); }

int tide_transport_send(void *nccl, const void *buf, size_t bytes, int peer, void *stream)
{
    return tide_nccl_send(nccl, buf, bytes, peer, stream);
}

int tide_transport_recv(void *nccl, void *buf, size_t bytes, int peer, void *stream)
{
    return tide_nccl_recv(nccl, buf, bytes, peer, stream);
}

int tide_transport_group_end(void) { return tide_nccl_group_end(); }

int tide_transport_nccl_check(void *nccl) { return tide_nccl_check(nccl); }

int tide_transport_cuda_aware_mpi(void)
{
#if TIDE_HAVE_MPI_EXT && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}
