/* transport.c: the GPU side of the exchanges (see transport.h), on gpu/'s packs and NCCL and
 * the backend's device memory. */
#include <stdlib.h>
#include "tide_config.h"
#include "comm/transport.h"
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
