// nccl.cu: NCCL communicators and grouped point-to-point transfers (gpu/nccl.h). In a build
// without NCCL every call answers as nccl.h says.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "tide_config.h"
#if TIDE_HAVE_NCCL
#include <nccl.h>
#endif
#include "backend/device.h"
#include "gpu/nccl.h"

struct tide_nccl {
#if TIDE_HAVE_NCCL
    ncclComm_t comm;
#endif
    int rank;
};

extern "C" int tide_nccl_create(MPI_Comm comm, int max_ctas, tide_nccl **out, char *why,
                                size_t len)
{
#if TIDE_HAVE_NCCL
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (rank == 0)
        r = ncclGetUniqueId(&id);
    // Rank 0's failure travels with the id, so no rank waits in ncclCommInitRank alone.
    int ok = r == ncclSuccess, all_ok = 0;
    if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        snprintf(why, len, "MPI failed while setting up NCCL");
        return TIDE_ERR_MPI;
    }
    if (!all_ok) {
        snprintf(why, len, "ncclGetUniqueId failed on rank 0");
        return TIDE_ERR_BACKEND;
    }
    tide_nccl *c = (tide_nccl *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    c->rank = rank;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (max_ctas > 0)
        config.minCTAs = 1, config.maxCTAs = max_ctas;
    r = ncclCommInitRankConfig(&c->comm, size, id, rank, &config);
#else // no configurations before NCCL 2.14: NCCL's own CTA counts
    (void)max_ctas;
    r = ncclCommInitRank(&c->comm, size, id, rank);
#endif
    if (r != ncclSuccess) {
        snprintf(why, len, "NCCL's communicator initialization failed: %s",
                 ncclGetErrorString(r));
        free(c);
        return TIDE_ERR_BACKEND;
    }
    *out = c;
    return 0;
#else
    (void)comm, (void)max_ctas;
    *out = nullptr;
    snprintf(why, len, "this build has no NCCL");
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" void tide_nccl_destroy(tide_nccl *c)
{
    if (!c)
        return;
#if TIDE_HAVE_NCCL
    ncclCommDestroy(c->comm);
#endif
    free(c);
}

#if TIDE_HAVE_NCCL
static int nccl_status(ncclResult_t r, const char *what)
{
    return r == ncclSuccess ? 0 : tide_gpu_note_error(what, ncclGetErrorString(r), (int)r);
}
#endif

extern "C" int tide_nccl_check(tide_nccl *c)
{
#if TIDE_HAVE_NCCL
    if (!c)
        return 0;
    ncclResult_t async = ncclSuccess;
    int st = nccl_status(ncclCommGetAsyncError(c->comm, &async), "ncclCommGetAsyncError");
    if (st)
        return st;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    if (async == ncclInProgress) // a nonblocking operation still running, no failure
        return 0;
#endif
    return nccl_status(async, "NCCL (asynchronous error)");
#else
    (void)c;
    return 0;
#endif
}

extern "C" int tide_nccl_group_start(void)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclGroupStart(), "ncclGroupStart");
#else
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_group_end(void)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclGroupEnd(), "ncclGroupEnd");
#else
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_send(tide_nccl *c, const void *buf, size_t bytes, int peer,
                              void *stream)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclSend(buf, bytes, ncclInt8, peer, c->comm, (cudaStream_t)stream),
                       "ncclSend");
#else
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_recv(tide_nccl *c, void *buf, size_t bytes, int peer, void *stream)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclRecv(buf, bytes, ncclInt8, peer, c->comm, (cudaStream_t)stream),
                       "ncclRecv");
#else
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_version(void)
{
#if TIDE_HAVE_NCCL
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
#else
    return 0;
#endif
}
