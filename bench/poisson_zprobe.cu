// poisson_zprobe: a scheme for the periodic float Poisson solve, measured beside the library
// (which does not use it yet): cuFFT's 2D R2C over (x, y) batched over z, one kernel that
// loads whole z columns of the half spectrum into shared memory and runs the forward FFT
// along z (radix-8 Stockham, nz = 512), the eigenvalue scaling and the inverse FFT there, and
// cuFFT's 2D C2R. It prints the probe's result against a 3D solve with a separate scaling
// (cuFFT's 3D transforms: the reference), and the medians of its pieces against cuFFT's bare
// 3D R2C + C2R pair (the bound of the solve's goal) and a copy of the spectrum, for several
// block shapes of the z kernel (columns per block, threads per column).
// Usage: poisson_zprobe [NX NY] (nz is 512; default 512 512).
#include <cufft.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CF(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { printf("%s:%d cufft %d\n", __FILE__, __LINE__, (int)r_); exit(1); } } while (0)

constexpr int NZ = 512, R = 8, NB = NZ / R, PAD = NZ + NZ / 8; // NB butterflies per stage

__device__ __forceinline__ int pad(int i) { return i + (i >> 3); }
__device__ __forceinline__ float2 cmul(float2 a, float2 b) { return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }

// DFT of 8 points in registers, natural order out; sign -1 forward, +1 inverse.
template <int S> __device__ __forceinline__ void dft8(float2 *v)
{
    const float s = 0.70710678118654752f;
    const float2 w1 = make_float2(s, S * s), w2 = make_float2(0.f, (float)S), w3 = make_float2(-s, S * s);
    float2 a[8], b[8], c[8];
#pragma unroll
    for (int r = 0; r < 4; r++) { a[r] = cadd(v[r], v[r + 4]); a[r + 4] = csub(v[r], v[r + 4]); }
    a[5] = cmul(a[5], w1); a[6] = cmul(a[6], w2); a[7] = cmul(a[7], w3);
#pragma unroll
    for (int h = 0; h < 8; h += 4) {
        b[h] = cadd(a[h], a[h + 2]); b[h + 1] = cadd(a[h + 1], a[h + 3]);
        b[h + 2] = csub(a[h], a[h + 2]); b[h + 3] = cmul(csub(a[h + 1], a[h + 3]), w2);
    }
#pragma unroll
    for (int q = 0; q < 8; q += 2) { c[q] = cadd(b[q], b[q + 1]); c[q + 1] = csub(b[q], b[q + 1]); }
    v[0] = c[0]; v[4] = c[1]; v[2] = c[2]; v[6] = c[3]; v[1] = c[4]; v[5] = c[5]; v[3] = c[6]; v[7] = c[7];
}

struct Scale { const float *ez; float exy, alpha, norm; }; // a column's eigenvalue scaling

// One Stockham radix-8 stage of a column in shared memory (in place: read, barrier, write):
// this thread's BF butterflies j = jt, jt + TPC, ... of the stage's NB. sc: on the inverse's
// first stage, each point's factor before its twiddle.
template <int S, int BF, int TPC>
__device__ __forceinline__ void stage(float2 *col, const float2 *tw, int jt, int Ns, const Scale *sc)
{
    float2 v[BF][R];
#pragma unroll
    for (int b = 0; b < BF; b++) {
        int j = jt + b * TPC, k = j % Ns;
#pragma unroll
        for (int r = 0; r < R; r++) {
            int z = j + r * NB;
            v[b][r] = col[pad(z)];
            if (sc) {
                float lam = sc->exy + sc->ez[z] - sc->alpha, f = lam != 0.f ? sc->norm / lam : 0.f;
                v[b][r].x *= f; v[b][r].y *= f;
            }
            float2 w = tw[(r * k * (NZ / (Ns * R))) & (NZ - 1)];
            if (S > 0) w.y = -w.y;
            v[b][r] = cmul(v[b][r], w);
        }
        dft8<S>(v[b]);
    }
    __syncthreads();
#pragma unroll
    for (int b = 0; b < BF; b++) {
        int j = jt + b * TPC, d = (j / Ns) * Ns * R + j % Ns;
#pragma unroll
        for (int r = 0; r < R; r++) col[pad(d + r * Ns)] = v[b][r];
    }
    __syncthreads();
}

// Columns c of the [z][y][xh] spectrum (ncols = ny xh, stride ncols between z planes), COLS
// of them per block, TPC threads per column: forward along z, times norm / (ex[x] + ey[y] +
// ez[z] - alpha) (0 for the zero mode), inverse along z. Dynamic shared memory: the columns
// (padded), the twiddles, ez.
template <int COLS, int TPC>
__global__ void __launch_bounds__(COLS * TPC) zsolve(float2 *a, int ncols, int xh, const float *ex,
                                                     const float *ey, const float *ez, float alpha, float norm)
{
    extern __shared__ float2 dyn[];
    float2 *s = dyn, *tw = dyn + COLS * PAD;
    float *ezs = (float *)(tw + NZ);
    int t = threadIdx.x;
    for (int i = t; i < NZ; i += blockDim.x) {
        float sn, cs;
        sincospif(-2.0f * i / NZ, &sn, &cs);
        tw[i] = make_float2(cs, sn);
        ezs[i] = ez[i];
    }
    int c0 = blockIdx.x * COLS;
    // load: consecutive threads, consecutive columns of one plane (COLS * 8 bytes a row)
    int lc = t % COLS, lz = t / COLS;
    bool ok = c0 + lc < ncols;
    for (int z = lz; z < NZ; z += TPC)
        s[lc * PAD + pad(z)] = ok ? a[(size_t)z * ncols + c0 + lc] : make_float2(0.f, 0.f);
    __syncthreads();
    int col = t / TPC, jt = t % TPC, cc = c0 + col;
    Scale sc = {ezs, cc < ncols ? ex[cc % xh] + ey[cc / xh] : 1.f, alpha, norm};
    float2 *cp = s + col * PAD;
    constexpr int BF = NB / TPC;
    for (int Ns = 1; Ns < NZ; Ns *= R) stage<-1, BF, TPC>(cp, tw, jt, Ns, nullptr);
    stage<1, BF, TPC>(cp, tw, jt, 1, &sc);
    for (int Ns = R; Ns < NZ; Ns *= R) stage<1, BF, TPC>(cp, tw, jt, Ns, nullptr);
    for (int z = lz; z < NZ && ok; z += TPC)
        a[(size_t)z * ncols + c0 + lc] = s[lc * PAD + pad(z)];
}

// The kernel of one shape (COLS columns a block, TPC threads a column), launched.
struct Zshape {
    int cols, tpc;
    void (*kernel)(float2 *, int, int, const float *, const float *, const float *, float, float);
    size_t smem() const { return (size_t)(cols * PAD + NZ) * sizeof(float2) + NZ * sizeof(float); }
    void prepare() const { CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem())); }
    void launch(float2 *c, int ncols, int xh, const float *ex, const float *ey, const float *ez, float alpha,
                float norm) const
    {
        kernel<<<(ncols + cols - 1) / cols, cols * tpc, smem()>>>(c, ncols, xh, ex, ey, ez, alpha, norm);
    }
};
static const Zshape shapes[] = {{8, 64, zsolve<8, 64>}, {16, 64, zsolve<16, 64>}, {16, 32, zsolve<16, 32>},
                                {32, 32, zsolve<32, 32>}, {32, 16, zsolve<32, 16>}};

// The reference's separate scaling over the [z][y][xh] spectrum.
__global__ void scale3d(float2 *a, int nz, int ny, int xh, const float *ex, const float *ey, const float *ez,
                        float alpha, float norm)
{
    size_t n = (size_t)nz * ny * xh;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int x = i % xh, y = (i / xh) % ny, z = i / ((size_t)xh * ny);
        float lam = ex[x] + ey[y] + ez[z] - alpha;
        float f = lam != 0.f ? norm / lam : 0.f;
        a[i].x *= f; a[i].y *= f;
    }
}

__global__ void copyk(float2 *d, const float2 *s, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = s[i];
}

template <typename F> float median_ms(F f, int reps = 20)
{
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) f();
    std::vector<float> t;
    for (int i = 0; i < reps; i++) { CK(cudaEventRecord(e0)); f(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms); }
    std::sort(t.begin(), t.end());
    return t[reps / 2];
}

static std::vector<float> eig(int n, double h)
{
    std::vector<float> e(n);
    for (int k = 0; k < n; k++) { double s = sin(M_PI * k / n); e[k] = (float)(-4.0 * s * s / (h * h)); }
    return e;
}

int main(int argc, char **argv)
{
    int nx = argc > 1 ? atoi(argv[1]) : 512, ny = argc > 2 ? atoi(argv[2]) : 512, nz = NZ, xh = nx / 2 + 1;
    size_t nr = (size_t)nx * ny * nz, nc = (size_t)xh * ny * nz;
    float alpha = 0.f, norm = 1.f / (float)nr;
    std::vector<float> hf(nr);
    srand(7);
    for (auto &v : hf) v = rand() / (float)RAND_MAX - 0.5f;
    float *f, *u, *ur, *dex, *dey, *dez; float2 *c;
    CK(cudaMalloc(&f, nr * 4)); CK(cudaMalloc(&u, nr * 4)); CK(cudaMalloc(&ur, nr * 4)); CK(cudaMalloc(&c, nc * 8));
    CK(cudaMemcpy(f, hf.data(), nr * 4, cudaMemcpyHostToDevice));
    auto ex = eig(nx, 1.0 / nx), ey = eig(ny, 1.0 / ny), ez = eig(nz, 1.0 / nz);
    ex.resize(xh);
    CK(cudaMalloc(&dex, xh * 4)); CK(cudaMalloc(&dey, ny * 4)); CK(cudaMalloc(&dez, nz * 4));
    CK(cudaMemcpy(dex, ex.data(), xh * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dey, ey.data(), ny * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dez, ez.data(), nz * 4, cudaMemcpyHostToDevice));
    cufftHandle f3, i3, f2, i2;
    CF(cufftPlan3d(&f3, nz, ny, nx, CUFFT_R2C)); CF(cufftPlan3d(&i3, nz, ny, nx, CUFFT_C2R));
    int n2[2] = {ny, nx}, in2[2] = {ny, nx}, on2[2] = {ny, xh};
    CF(cufftPlanMany(&f2, 2, n2, in2, 1, ny * nx, on2, 1, ny * xh, CUFFT_R2C, nz));
    CF(cufftPlanMany(&i2, 2, n2, on2, 1, ny * xh, in2, 1, ny * nx, CUFFT_C2R, nz));
    int ncols = ny * xh;
    // the reference: 3D pair with the separate scaling
    CF(cufftExecR2C(f3, f, c)); scale3d<<<2048, 256>>>(c, nz, ny, xh, dex, dey, dez, alpha, norm); CF(cufftExecC2R(i3, c, ur));
    CK(cudaDeviceSynchronize());
    std::vector<float> a(nr), b(nr);
    CK(cudaMemcpy(b.data(), ur, nr * 4, cudaMemcpyDeviceToHost));
    float2 *c2; CK(cudaMalloc(&c2, nc * 8));
    float t_pair = median_ms([&] { cufftExecR2C(f3, f, c); cufftExecC2R(i3, c, u); });
    float t_ref = median_ms([&] { cufftExecR2C(f3, f, c); scale3d<<<2048, 256>>>(c, nz, ny, xh, dex, dey, dez, alpha, norm); cufftExecC2R(i3, c, u); });
    float t_f2 = median_ms([&] { cufftExecR2C(f2, f, c); });
    float t_i2 = median_ms([&] { cufftExecC2R(i2, c, u); });
    float t_copy = median_ms([&] { copyk<<<4096, 256>>>(c2, c, nc); });
    printf("grid %dx%dx%d float\n", nx, ny, nz);
    printf("bare 3D R2C + C2R pair (bound)       %.4f ms\n", t_pair);
    printf("3D pair + separate scaling           %.4f ms  (%.3f of the pair)\n", t_ref, t_ref / t_pair);
    printf("2D R2C (x,y) batched over z          %.4f ms\n", t_f2);
    printf("2D C2R                               %.4f ms\n", t_i2);
    printf("copy of the spectrum                 %.4f ms\n", t_copy);
    int wrong = 0;
    for (const Zshape &z : shapes) {
        z.prepare();
        // the probe's solve, checked against the reference
        CF(cufftExecR2C(f2, f, c)); z.launch(c, ncols, xh, dex, dey, dez, alpha, norm); CK(cudaGetLastError()); CF(cufftExecC2R(i2, c, u));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(a.data(), u, nr * 4, cudaMemcpyDeviceToHost));
        double md = 0, mb = 0;
        for (size_t i = 0; i < nr; i++) { md = std::max(md, (double)fabsf(a[i] - b[i])); mb = std::max(mb, (double)fabsf(b[i])); }
        float t_z = median_ms([&] { z.launch(c, ncols, xh, dex, dey, dez, alpha, norm); });
        float t_probe = median_ms([&] { cufftExecR2C(f2, f, c); z.launch(c, ncols, xh, dex, dey, dez, alpha, norm); cufftExecC2R(i2, c, u); });
        printf("z kernel %2d columns x %2d threads: %.4f ms (%.3f of a copy); solve %.4f ms (%.3f of the pair); "
               "max |probe - reference| / max |reference| %.3g%s\n", z.cols, z.tpc, t_z, t_z / t_copy, t_probe,
               t_probe / t_pair, md / mb, md / mb < 1e-5 ? "" : "  WRONG");
        wrong += !(md / mb < 1e-5);
    }
    return wrong ? 1 : 0;
}
