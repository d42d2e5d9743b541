! tide.f90: the Fortran module of Tide (docs/fortran.md). The C API of src/tide.h through
! iso_c_binding: the same plans, options and status codes, with Fortran's arrays.
!
! - Communicators: type(MPI_Comm) of mpi_f08, or an integer handle of mpi / mpif.h.
! - Boxes keep tide.h's numbers (lo inclusive, hi exclusive, from 0; dimension 0 is x) and take
!   Fortran's storage order by default: order = [2, 1, 0], x fastest, so a box is the array
!   u(lo(1):hi(1)-1, lo(2):hi(2)-1, lo(3):hi(3)-1). The box helpers return that order.
! - Options are derived types whose components start at the library's defaults; edit them and
!   pass them. Info types are filled by the *_info calls.
! - Host arrays are assumed-shape arrays of the plan's kind, contiguous (never copied: a
!   non-contiguous section is refused); device arrays are type(c_ptr).
! - Every call takes an optional stat: without it a failure prints the message and stops.
!   A rank whose array is refused passes NULL to the library, so a collective call fails on
!   every rank alike.
module tide
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only : error_unit
  use mpi_f08, only : MPI_Comm, MPI_Comm_rank
  implicit none
  private

  integer(c_int), parameter, public :: TIDE_SUCCESS = 0, TIDE_ERR_ARGUMENT = 1, &
    TIDE_ERR_BOX = 2, TIDE_ERR_MISMATCH = 3, TIDE_ERR_UNSUPPORTED = 4, TIDE_ERR_NOMEM = 5, &
    TIDE_ERR_MPI = 6, TIDE_ERR_BACKEND = 7, TIDE_ERR_TOO_LARGE = 8
  integer(c_int), parameter, public :: TIDE_BACKEND_AUTO = 0, TIDE_BACKEND_CPU = 1, &
    TIDE_BACKEND_CUDA = 2, TIDE_DEVICE_AUTO = -1, TIDE_DEVICE_CURRENT = -2
  integer(c_int), parameter, public :: TIDE_EXCHANGE_AUTO = 0, TIDE_EXCHANGE_A2AV = 1, &
    TIDE_EXCHANGE_P2P = 2, TIDE_EXCHANGE_NCCL = 3, TIDE_EXCHANGE_CUDA_MPI = 4, &
    TIDE_EXCHANGE_DIRECT = 5
  integer(c_int), parameter, public :: TIDE_C2C = 0, TIDE_R2C = 1, TIDE_DOUBLE = 0, &
    TIDE_FLOAT = 1, TIDE_SCALE_NONE = 0, TIDE_SCALE_FULL = 1, TIDE_SCALE_SYMMETRIC = 2, &
    TIDE_LOCATION_HOST = 0, TIDE_LOCATION_DEVICE = 1, TIDE_DECOMP_AUTO = 0, &
    TIDE_DECOMP_SLABS = 1, TIDE_DECOMP_PENCILS = 2, TIDE_PLAN_ESTIMATE = 0, &
    TIDE_PLAN_MEASURE = 1
  integer(c_int), parameter, public :: TIDE_BC_PERIODIC = 0, TIDE_BC_NEUMANN = 1, &
    TIDE_BC_DIRICHLET = 2, TIDE_EIGEN_FD2 = 0, TIDE_EIGEN_SPECTRAL = 1, TIDE_OOC_AUTO = 0, &
    TIDE_OOC_STREAM = 1, TIDE_OOC_STREAM_CPU_X = 2
  integer(c_int), parameter, public :: TIDE_STENCIL_7PT = 0, TIDE_STENCIL_27PT = 1, &
    TIDE_STENCIL_STAR = 2, TIDE_STENCIL_BOX = 3
  integer(c_int), parameter, public :: TIDE_NOTRANS = 0, TIDE_TRANS = 1, TIDE_CONJTRANS = 2, &
    TIDE_REAL = 0, TIDE_COMPLEX = 1, TIDE_COL_MAJOR = 0, TIDE_ROW_MAJOR = 1

  ! ---- types ---------------------------------------------------------------------------------
  type, bind(c), public :: tide_box
    integer(c_int) :: lo(3) = 0, hi(3) = 0, order(3) = [2, 1, 0]
  end type

  type, bind(c), public :: tide_context_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: backend = TIDE_BACKEND_AUTO, threads = 0
    integer(c_size_t) :: device_budget = 0
    integer(c_int) :: bind = 1, device = TIDE_DEVICE_AUTO
  end type

  type, bind(c), public :: tide_fft_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: type = TIDE_C2C, precision = TIDE_DOUBLE, backend = TIDE_BACKEND_AUTO, &
      decomposition = TIDE_DECOMP_AUTO, exchange = TIDE_EXCHANGE_AUTO, &
      scaling = TIDE_SCALE_NONE, planning = TIDE_PLAN_ESTIMATE, batch = 1, &
      transposed_out = 0, location = TIDE_LOCATION_HOST
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int) :: async = 0, arrays_kept = 0
  end type

  type, bind(c), public :: tide_fft_info
    integer(c_long_long) :: in_count, out_count
    integer(c_size_t) :: in_bytes, out_bytes, inplace_bytes, host_bytes, pinned_bytes, &
      device_bytes
    integer(c_int) :: exchanges, local_transforms
    real(c_double) :: flops
    integer(c_int) :: backend, exchange, decomposition, location, chunks, streams, slots, &
      round_trips
  end type

  type, bind(c), public :: tide_poisson_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: precision = TIDE_DOUBLE, backend = TIDE_BACKEND_AUTO, &
      location = TIDE_LOCATION_HOST, decomposition = TIDE_DECOMP_AUTO, &
      exchange = TIDE_EXCHANGE_AUTO, planning = TIDE_PLAN_ESTIMATE, batch = 1
    integer(c_int) :: bc(2, 3) = TIDE_BC_PERIODIC   ! bc(face, dimension): tide.h's bc[3][2]
    real(c_double) :: h(3) = 1, alpha = 0
    integer(c_int) :: eigen = TIDE_EIGEN_FD2
    type(c_ptr) :: stream = c_null_ptr
    type(c_ptr) :: faces(3) = c_null_ptr
    integer(c_int) :: out_of_card = TIDE_OOC_AUTO
  end type

  type, bind(c), public :: tide_poisson_info
    integer(c_long_long) :: count
    integer(c_size_t) :: bytes, host_bytes, pinned_bytes, device_bytes
    integer(c_int) :: exchanges, passes, fused_scaling, singular
    real(c_double) :: flops
    integer(c_int) :: backend, decomposition, exchange, location, round_trips, &
      cpu_transforms, chunks
  end type

  ! weights, offsets and source are c_loc of the caller's arrays (weights and offsets are read
  ! at plan creation, the source at every run)
  type, bind(c), public :: tide_stencil_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: precision = TIDE_DOUBLE, backend = TIDE_BACKEND_AUTO, &
      location = TIDE_LOCATION_HOST, shape = TIDE_STENCIL_7PT
    type(c_ptr) :: weights = c_null_ptr
    integer(c_int) :: radius = 0, npoints = 0
    type(c_ptr) :: offsets = c_null_ptr
    integer(c_int) :: bc(3) = TIDE_BC_DIRICHLET
    type(c_ptr) :: source = c_null_ptr
    integer(c_int) :: fuse = 0
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int) :: level_steps = 0, overlap = 0, exchange = TIDE_EXCHANGE_AUTO
  end type

  type, bind(c), public :: tide_stencil_info
    integer(c_long_long) :: count
    integer(c_size_t) :: bytes, host_bytes, pinned_bytes, device_bytes
    integer(c_int) :: taps, radius, fuse
    real(c_double) :: flops, bytes_per_step
    integer(c_int) :: backend, location
    type(tide_box) :: box
    integer(c_int) :: grid(3)
    integer(c_long_long) :: halo_points, exchanges
    real(c_double) :: halo_seconds
    integer(c_int) :: slabs, level_steps, halo_exchange, overlapped
  end type

  type, bind(c), public :: tide_gemm_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: precision = TIDE_DOUBLE, backend = TIDE_BACKEND_AUTO, &
      location = TIDE_LOCATION_HOST, order = TIDE_COL_MAJOR, transa = TIDE_NOTRANS, &
      transb = TIDE_NOTRANS
    integer(c_long_long) :: lda = 0, ldb = 0, ldc = 0
    integer(c_int) :: tile = 0, panel = 0, grid(2) = 0
    type(c_ptr) :: stream = c_null_ptr
    type(c_ptr) :: blocks(4) = c_null_ptr
    integer(c_int) :: gpus = 0, share_a = 0, domain = TIDE_REAL, exchange = TIDE_EXCHANGE_AUTO
  end type

  type, bind(c), public :: tide_gemm_info
    integer(c_long_long) :: m, n, k
    real(c_double) :: flops
    integer(c_size_t) :: host_bytes, pinned_bytes, device_bytes
    integer(c_long_long) :: tile_m, tile_n, panel
    integer(c_int) :: tiles, panels, slots
    real(c_double) :: bytes_up, bytes_down, rate_up, rate_down, rate_both, rate_gemm, bound
    integer(c_int) :: gpus, shared_a, grid(2), backend, location
  end type

  type, bind(c), public :: tide_device_info
    integer(c_int) :: device
    character(kind=c_char) :: name(128), pci_bus_id(32)
    integer(c_int) :: cc_major, cc_minor
    integer(c_size_t) :: total_bytes, free_bytes, budget_bytes
    character(kind=c_char) :: cpuset(128)
    integer(c_int) :: cuda_aware_mpi, nccl_version
  end type

  type, bind(c), public :: tide_rates
    real(c_double) :: host_copy, h2d, d2h, both, d2d
  end type

  type, bind(c), public :: tide_fft_cost
    real(c_double) :: flops, fft_bytes, move_bytes, exchange_bytes, h2d_bytes, d2h_bytes
    integer(c_int) :: exchanges, fft_passes
    real(c_double) :: cpu_seconds
  end type

  ! Handles. A plan remembers what its arrays must be (kind, box, fields) to check them.
  type, public :: tide_context
    type(c_ptr) :: p = c_null_ptr
    integer :: rank = 0
  end type
  type, public :: tide_fft_plan
    type(c_ptr) :: p = c_null_ptr, ctx = c_null_ptr
    type(tide_box) :: inbox, outbox
    integer :: in_elem = 0, out_elem = 0, batch = 1
  end type
  type, public :: tide_poisson_plan
    type(c_ptr) :: p = c_null_ptr, ctx = c_null_ptr
    type(tide_box) :: box
    integer :: elem = 0, batch = 1
  end type
  type, public :: tide_stencil_plan
    type(c_ptr) :: p = c_null_ptr, ctx = c_null_ptr
    type(tide_box) :: box
    integer :: elem = 0
  end type
  type, public :: tide_band_plan
    type(c_ptr) :: p = c_null_ptr, ctx = c_null_ptr
    integer :: elem = 0, rows = 0
  end type
  type, public :: tide_gemm_plan
    type(c_ptr) :: p = c_null_ptr, ctx = c_null_ptr
    integer :: elem = 0
    integer(c_long_long) :: a(2) = 0, b(2) = 0, c(2) = 0, lda = 0, ldb = 0, ldc = 0
    integer :: order = TIDE_COL_MAJOR
  end type

  ! element kinds the plans take, for the checks
  ! diagonals is c_loc of the caller's (rows, kl + ku + 1) array: column d + kl + 1 holds
  ! A(lo + i, lo + i + d) in row i + 1 (tide.h); read at plan creation only
  type, bind(c), public :: tide_band_options
    integer(c_size_t) :: size = 0
    integer(c_int) :: precision = TIDE_DOUBLE, backend = TIDE_BACKEND_AUTO, &
      location = TIDE_LOCATION_HOST, kl = 1, ku = 1
    type(c_ptr) :: diagonals = c_null_ptr
    integer(c_int) :: steps_per_pass = 0
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int) :: slab_rows = 0
  end type

  type, bind(c), public :: tide_band_info
    integer(c_int) :: lo, hi
    integer(c_size_t) :: bytes, host_bytes, pinned_bytes, device_bytes
    integer(c_int) :: kl, ku, steps_per_pass
    real(c_double) :: flops, bytes_per_step
    integer(c_int) :: backend, location
    integer(c_long_long) :: halo_rows, exchanges
    real(c_double) :: halo_seconds
    integer(c_int) :: slabs, slab_rows
  end type

  integer, parameter :: R8 = 1, R4 = 2, Z8 = 3, Z4 = 4
  character(len=*), parameter :: ELEM_NAME(4) = [character(len=17) :: 'real(c_double)', &
    'real(c_float)', 'complex(c_double)', 'complex(c_float)']

  ! this rank's reason for refusing an array in the last call ("" when none)
  character(len=200), save :: local_note = ''

  public :: tide_version, tide_strerror, tide_last_error, tide_context_create, &
    tide_context_destroy, tide_context_backend, tide_box_count, tide_box_slab, &
    tide_box_pencil, tide_box_in_grid, tide_proc_grid, tide_fft_plan_create, &
    tide_fft_plan_destroy, tide_fft_plan_info, tide_fft_plan_describe, tide_fft_forward, &
    tide_fft_backward, tide_poisson_plan_create, tide_poisson_plan_destroy, &
    tide_poisson_plan_info, tide_poisson_solve, tide_poisson_mean, tide_stencil_plan_create, &
    tide_stencil_plan_destroy, tide_stencil_plan_info, tide_stencil_run, &
    tide_gemm_plan_create, tide_gemm_plan_destroy, tide_gemm_plan_info, tide_gemm_execute, &
    tide_fft_options_init, tide_poisson_options_init, tide_stencil_options_init, &
    tide_gemm_options_init, tide_context_options_init
  public :: tide_context_threads, tide_context_set_progress, tide_context_gpu_status, &
    tide_context_device, &
    tide_measure_rates, tide_measure_exchange, tide_host_alloc, tide_host_free, &
    tide_device_alloc, tide_device_free, tide_copy, tide_c_string, tide_fft_plan_cost, &
    tide_poisson_plan_cost, tide_poisson_plan_describe, tide_stencil_plan_describe, &
    tide_gemm_plan_describe, tide_fft_plan_set_stream, tide_poisson_plan_set_stream, &
    tide_stencil_plan_set_stream, tide_gemm_plan_set_stream
  public :: tide_band_options_init, tide_band_plan_create, tide_band_plan_destroy, &
    tide_band_plan_info, tide_band_plan_describe, tide_band_plan_set_stream, tide_band_run

  interface tide_context_create
    module procedure context_create_f08, context_create_int
  end interface
  interface tide_fft_forward
    module procedure fft_forward_z, fft_forward_c, fft_forward_d, fft_forward_s, fft_forward_ptr
  end interface
  interface tide_fft_backward
    module procedure fft_backward_z, fft_backward_c, fft_backward_d, fft_backward_s, &
      fft_backward_ptr
  end interface
  interface tide_poisson_solve
    module procedure poisson_solve_d, poisson_solve_s, poisson_solve_ptr
  end interface
  interface tide_stencil_run
    module procedure stencil_run_d, stencil_run_s, stencil_run_ptr
  end interface
  interface tide_band_run
    module procedure band_run_d, band_run_s, band_run_ptr
  end interface
  interface tide_gemm_execute
    module procedure gemm_execute_d, gemm_execute_s, gemm_execute_z, gemm_execute_c, &
      gemm_execute_ptr, gemm_execute_ptr_complex
  end interface

  ! ---- the C functions -----------------------------------------------------------------------
  interface
    function c_version() bind(c, name='tide_version')
      import :: c_ptr
      type(c_ptr) :: c_version
    end function
    function c_strerror(status) bind(c, name='tide_strerror')
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: c_strerror
    end function
    function c_last_error(ctx) bind(c, name='tide_last_error')
      import :: c_ptr
      type(c_ptr), value :: ctx
      type(c_ptr) :: c_last_error
    end function
    function c_strlen(s) bind(c, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: c_strlen
    end function
    function c_context_create(comm, opts, ctx) bind(c, name='tide_f_context_create')
      import :: c_int, c_ptr, tide_context_options
      integer(c_int), value :: comm
      type(tide_context_options), intent(in) :: opts
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: c_context_create
    end function
    function c_context_destroy(ctx) bind(c, name='tide_context_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx
      integer(c_int) :: c_context_destroy
    end function
    function c_context_backend(ctx, backend) bind(c, name='tide_context_backend')
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: backend
      integer(c_int) :: c_context_backend
    end function
    function tide_box_count(box) bind(c, name='tide_box_count')
      import :: c_long_long, tide_box
      type(tide_box), intent(in) :: box
      integer(c_long_long) :: tide_box_count
    end function
    function c_proc_grid(nranks, n, split, grid) bind(c, name='tide_proc_grid')
      import :: c_int
      integer(c_int), value :: nranks
      integer(c_int), intent(in) :: n(3), split(3)
      integer(c_int), intent(out) :: grid(3)
      integer(c_int) :: c_proc_grid
    end function
    function c_box_in_grid(n, grid, rank, box) bind(c, name='tide_box_in_grid')
      import :: c_int, tide_box
      integer(c_int), intent(in) :: n(3), grid(3)
      integer(c_int), value :: rank
      type(tide_box), intent(out) :: box
      integer(c_int) :: c_box_in_grid
    end function
    function c_box_slab(n, dim, nranks, rank, box) bind(c, name='tide_box_slab')
      import :: c_int, tide_box
      integer(c_int), intent(in) :: n(3)
      integer(c_int), value :: dim, nranks, rank
      type(tide_box), intent(out) :: box
      integer(c_int) :: c_box_slab
    end function
    function c_box_pencil(n, dim, nranks, rank, box) bind(c, name='tide_box_pencil')
      import :: c_int, tide_box
      integer(c_int), intent(in) :: n(3)
      integer(c_int), value :: dim, nranks, rank
      type(tide_box), intent(out) :: box
      integer(c_int) :: c_box_pencil
    end function
    ! the library's own defaults into the module's types (the tests compare them)
    subroutine tide_context_options_init(o) bind(c, name='tide_context_options_init')
      import :: tide_context_options
      type(tide_context_options), intent(out) :: o
    end subroutine
    subroutine tide_fft_options_init(o) bind(c, name='tide_fft_options_init')
      import :: tide_fft_options
      type(tide_fft_options), intent(out) :: o
    end subroutine
    subroutine tide_poisson_options_init(o) bind(c, name='tide_poisson_options_init')
      import :: tide_poisson_options
      type(tide_poisson_options), intent(out) :: o
    end subroutine
    subroutine tide_stencil_options_init(o) bind(c, name='tide_stencil_options_init')
      import :: tide_stencil_options
      type(tide_stencil_options), intent(out) :: o
    end subroutine
    subroutine tide_gemm_options_init(o) bind(c, name='tide_gemm_options_init')
      import :: tide_gemm_options
      type(tide_gemm_options), intent(out) :: o
    end subroutine
    function c_fft_plan_create(ctx, n, inbox, outbox, opts, plan) &
        bind(c, name='tide_fft_plan_create')
      import :: c_int, c_ptr, tide_fft_options
      type(c_ptr), value :: ctx, inbox, outbox
      integer(c_int), intent(in) :: n(3)
      type(tide_fft_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: c_fft_plan_create
    end function
    function c_fft_plan_boxes(plan, inbox, outbox) bind(c, name='tide_fft_plan_boxes')
      import :: c_int, c_ptr, tide_box
      type(c_ptr), value :: plan
      type(tide_box), intent(out) :: inbox, outbox
      integer(c_int) :: c_fft_plan_boxes
    end function
    function c_fft_plan_info(plan, info) bind(c, name='tide_fft_plan_info')
      import :: c_int, c_ptr, tide_fft_info
      type(c_ptr), value :: plan
      type(tide_fft_info), intent(out) :: info
      integer(c_int) :: c_fft_plan_info
    end function
    function c_fft_forward(plan, in, out) bind(c, name='tide_fft_forward')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, in, out
      integer(c_int) :: c_fft_forward
    end function
    function c_fft_backward(plan, in, out) bind(c, name='tide_fft_backward')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, in, out
      integer(c_int) :: c_fft_backward
    end function
    function c_poisson_solve(plan, in, out) bind(c, name='tide_poisson_solve')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, in, out
      integer(c_int) :: c_poisson_solve
    end function
    function c_fft_plan_destroy(plan) bind(c, name='tide_fft_plan_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: c_fft_plan_destroy
    end function
    function c_poisson_plan_destroy(plan) bind(c, name='tide_poisson_plan_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: c_poisson_plan_destroy
    end function
    function c_stencil_plan_destroy(plan) bind(c, name='tide_stencil_plan_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: c_stencil_plan_destroy
    end function
    function c_gemm_plan_destroy(plan) bind(c, name='tide_gemm_plan_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: c_gemm_plan_destroy
    end function
    function c_fft_plan_describe(plan, buf, len) bind(c, name='tide_fft_plan_describe')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: c_fft_plan_describe
    end function
    function c_poisson_plan_create(ctx, n, box, opts, plan) &
        bind(c, name='tide_poisson_plan_create')
      import :: c_int, c_ptr, tide_poisson_options
      type(c_ptr), value :: ctx, box
      integer(c_int), intent(in) :: n(3)
      type(tide_poisson_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: c_poisson_plan_create
    end function
    function c_poisson_plan_box(plan, box) bind(c, name='tide_poisson_plan_box')
      import :: c_int, c_ptr, tide_box
      type(c_ptr), value :: plan
      type(tide_box), intent(out) :: box
      integer(c_int) :: c_poisson_plan_box
    end function
    function c_poisson_plan_info(plan, info) bind(c, name='tide_poisson_plan_info')
      import :: c_int, c_ptr, tide_poisson_info
      type(c_ptr), value :: plan
      type(tide_poisson_info), intent(out) :: info
      integer(c_int) :: c_poisson_plan_info
    end function
    function c_poisson_mean(plan, mean) bind(c, name='tide_poisson_mean')
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: plan
      real(c_double), intent(out) :: mean(*)
      integer(c_int) :: c_poisson_mean
    end function
    function c_stencil_plan_create(ctx, n, box, opts, plan) &
        bind(c, name='tide_stencil_plan_create')
      import :: c_int, c_ptr, tide_stencil_options
      type(c_ptr), value :: ctx, box
      integer(c_int), intent(in) :: n(3)
      type(tide_stencil_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: c_stencil_plan_create
    end function
    function c_stencil_plan_info(plan, info) bind(c, name='tide_stencil_plan_info')
      import :: c_int, c_ptr, tide_stencil_info
      type(c_ptr), value :: plan
      type(tide_stencil_info), intent(out) :: info
      integer(c_int) :: c_stencil_plan_info
    end function
    function c_stencil_run(plan, u, steps) bind(c, name='tide_stencil_run')
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: plan, u
      integer(c_long_long), value :: steps
      integer(c_int) :: c_stencil_run
    end function
    function c_gemm_plan_create(ctx, m, n, k, opts, plan) bind(c, name='tide_gemm_plan_create')
      import :: c_int, c_ptr, c_long_long, tide_gemm_options
      type(c_ptr), value :: ctx
      integer(c_long_long), value :: m, n, k
      type(tide_gemm_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: c_gemm_plan_create
    end function
    function c_gemm_plan_info(plan, info) bind(c, name='tide_gemm_plan_info')
      import :: c_int, c_ptr, tide_gemm_info
      type(c_ptr), value :: plan
      type(tide_gemm_info), intent(out) :: info
      integer(c_int) :: c_gemm_plan_info
    end function
    function c_gemm_execute_complex(plan, alpha, a, b, beta, c) &
        bind(c, name='tide_gemm_execute_complex')
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: plan, a, b, c
      real(c_double), intent(in) :: alpha(2), beta(2)
      integer(c_int) :: c_gemm_execute_complex
    end function
    function c_context_threads(ctx, threads) bind(c, name='tide_context_threads')
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: threads
      integer(c_int) :: c_context_threads
    end function
    function c_context_set_progress(ctx, seconds) bind(c, name='tide_context_set_progress')
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: ctx
      real(c_double), value :: seconds
      integer(c_int) :: c_context_set_progress
    end function
    function c_context_gpu_status(ctx) bind(c, name='tide_context_gpu_status')
      import :: c_ptr
      type(c_ptr), value :: ctx
      type(c_ptr) :: c_context_gpu_status
    end function
    function c_context_device(ctx, info) bind(c, name='tide_context_device')
      import :: c_int, c_ptr, tide_device_info
      type(c_ptr), value :: ctx
      type(tide_device_info), intent(out) :: info
      integer(c_int) :: c_context_device
    end function
    function c_measure_rates(ctx, bytes, rates) bind(c, name='tide_measure_rates')
      import :: c_int, c_ptr, c_size_t, tide_rates
      type(c_ptr), value :: ctx
      integer(c_size_t), value :: bytes
      type(tide_rates), intent(out) :: rates
      integer(c_int) :: c_measure_rates
    end function
    function c_measure_rates_together(ctx, bytes, rates) &
        bind(c, name='tide_measure_rates_together')
      import :: c_int, c_ptr, c_size_t, tide_rates
      type(c_ptr), value :: ctx
      integer(c_size_t), value :: bytes
      type(tide_rates), intent(out) :: rates
      integer(c_int) :: c_measure_rates_together
    end function
    function c_measure_exchange(ctx, how, bytes, gbps) bind(c, name='tide_measure_exchange')
      import :: c_int, c_ptr, c_size_t, c_double
      type(c_ptr), value :: ctx
      integer(c_int), value :: how
      integer(c_size_t), value :: bytes
      real(c_double), intent(out) :: gbps
      integer(c_int) :: c_measure_exchange
    end function
    function c_host_alloc(ctx, bytes, ptr) bind(c, name='tide_host_alloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: ctx
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: ptr
      integer(c_int) :: c_host_alloc
    end function
    function c_host_free(ctx, ptr) bind(c, name='tide_host_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, ptr
      integer(c_int) :: c_host_free
    end function
    function c_device_alloc(ctx, bytes, ptr) bind(c, name='tide_device_alloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: ctx
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: ptr
      integer(c_int) :: c_device_alloc
    end function
    function c_device_free(ctx, ptr) bind(c, name='tide_device_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, ptr
      integer(c_int) :: c_device_free
    end function
    function c_copy(ctx, dst, src, bytes) bind(c, name='tide_copy')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: ctx, dst, src
      integer(c_size_t), value :: bytes
      integer(c_int) :: c_copy
    end function
    function c_fft_plan_cost(plan, direction, cost) bind(c, name='tide_fft_plan_cost')
      import :: c_int, c_ptr, tide_fft_cost
      type(c_ptr), value :: plan
      integer(c_int), value :: direction
      type(tide_fft_cost), intent(out) :: cost
      integer(c_int) :: c_fft_plan_cost
    end function
    function c_poisson_plan_cost(plan, cost) bind(c, name='tide_poisson_plan_cost')
      import :: c_int, c_ptr, tide_fft_cost
      type(c_ptr), value :: plan
      type(tide_fft_cost), intent(out) :: cost
      integer(c_int) :: c_poisson_plan_cost
    end function
    function c_poisson_plan_describe(plan, buf, len) bind(c, name='tide_poisson_plan_describe')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: c_poisson_plan_describe
    end function
    function c_stencil_plan_describe(plan, buf, len) bind(c, name='tide_stencil_plan_describe')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: c_stencil_plan_describe
    end function
    function c_gemm_plan_describe(plan, buf, len) bind(c, name='tide_gemm_plan_describe')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: c_gemm_plan_describe
    end function
    function c_fft_plan_set_stream(plan, stream) bind(c, name='tide_fft_plan_set_stream')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, stream
      integer(c_int) :: c_fft_plan_set_stream
    end function
    function c_poisson_plan_set_stream(plan, stream) &
        bind(c, name='tide_poisson_plan_set_stream')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, stream
      integer(c_int) :: c_poisson_plan_set_stream
    end function
    function c_stencil_plan_set_stream(plan, stream) &
        bind(c, name='tide_stencil_plan_set_stream')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, stream
      integer(c_int) :: c_stencil_plan_set_stream
    end function
    function c_gemm_plan_set_stream(plan, stream) bind(c, name='tide_gemm_plan_set_stream')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, stream
      integer(c_int) :: c_gemm_plan_set_stream
    end function
    subroutine c_band_options_init(o) bind(c, name='tide_band_options_init')
      import :: tide_band_options
      type(tide_band_options), intent(out) :: o
    end subroutine
    function c_band_plan_create(ctx, n, lo, hi, opts, plan) bind(c, name='tide_band_plan_create')
      import :: c_int, c_ptr, tide_band_options
      type(c_ptr), value :: ctx
      integer(c_int), value :: n, lo, hi
      type(tide_band_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: c_band_plan_create
    end function
    function c_band_plan_destroy(plan) bind(c, name='tide_band_plan_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: c_band_plan_destroy
    end function
    function c_band_plan_info(plan, info) bind(c, name='tide_band_plan_info')
      import :: c_int, c_ptr, tide_band_info
      type(c_ptr), value :: plan
      type(tide_band_info), intent(out) :: info
      integer(c_int) :: c_band_plan_info
    end function
    function c_band_plan_describe(plan, buf, len) bind(c, name='tide_band_plan_describe')
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: c_band_plan_describe
    end function
    function c_band_plan_set_stream(plan, stream) bind(c, name='tide_band_plan_set_stream')
      import :: c_int, c_ptr
      type(c_ptr), value :: plan, stream
      integer(c_int) :: c_band_plan_set_stream
    end function
    function c_band_run(plan, x, steps) bind(c, name='tide_band_run')
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: plan, x
      integer(c_long_long), value :: steps
      integer(c_int) :: c_band_run
    end function
  end interface

contains

  ! ---- strings and errors --------------------------------------------------------------------
  function c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  function tide_version() result(s)
    character(len=:), allocatable :: s
    s = c_string(c_version())
  end function

  function tide_strerror(status) result(s)
    integer, intent(in) :: status
    character(len=:), allocatable :: s
    s = c_string(c_strerror(int(status, c_int)))
  end function

  !> The message of the last failed call on ctx (absent: of calls without a context), with
  !> this rank's reason when it was this module that refused an array.
  function tide_last_error(ctx) result(s)
    type(tide_context), intent(in), optional :: ctx
    character(len=:), allocatable :: s
    if (present(ctx)) then
      s = c_string(c_last_error(ctx%p))
    else
      s = c_string(c_last_error(c_null_ptr))
    end if
    if (len_trim(local_note) > 0) s = s // ' (on this rank: ' // trim(local_note) // ')'
  end function

  !> stat = status when present; else a failure prints its message and stops this image.
  subroutine finish(status, ctx, stat)
    integer(c_int), intent(in) :: status
    type(c_ptr), intent(in) :: ctx
    integer, intent(out), optional :: stat
    if (present(stat)) then
      stat = status
    else if (status /= TIDE_SUCCESS) then
      write (error_unit, '(4a)') 'tide: ', tide_strerror(status), ': ', c_string(c_last_error(ctx))
      if (len_trim(local_note) > 0) write (error_unit, '(2a)') 'tide: on this rank: ', &
        trim(local_note)
      error stop 1
    end if
  end subroutine

  ! ---- context -------------------------------------------------------------------------------
  subroutine context_create_f08(comm, ctx, opts, stat)
    type(MPI_Comm), intent(in) :: comm
    type(tide_context), intent(out) :: ctx
    type(tide_context_options), intent(in), optional :: opts
    integer, intent(out), optional :: stat
    call context_create_int(comm%MPI_VAL, ctx, opts, stat)
  end subroutine

  subroutine context_create_int(comm, ctx, opts, stat)
    integer, intent(in) :: comm
    type(tide_context), intent(out) :: ctx
    type(tide_context_options), intent(in), optional :: opts
    integer, intent(out), optional :: stat
    type(tide_context_options) :: o
    type(MPI_Comm) :: c
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    c%MPI_VAL = comm
    call MPI_Comm_rank(c, ctx%rank)
    local_note = ''
    call finish(c_context_create(int(comm, c_int), o, ctx%p), c_null_ptr, stat)
  end subroutine

  subroutine tide_context_destroy(ctx, stat)
    type(tide_context), intent(inout) :: ctx
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    local_note = ''
    st = c_context_destroy(ctx%p)
    if (st == TIDE_SUCCESS) ctx%p = c_null_ptr
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_context_backend(ctx, backend, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(out) :: backend
    integer, intent(out), optional :: stat
    integer(c_int) :: b, st
    st = c_context_backend(ctx%p, b)
    if (st == TIDE_SUCCESS) backend = b
    call finish(st, ctx%p, stat)
  end subroutine

  ! ---- boxes (Fortran order) -----------------------------------------------------------------
  subroutine tide_box_slab(n, split_dim, nranks, rank, box, stat)
    integer, intent(in) :: n(3), split_dim, nranks, rank
    type(tide_box), intent(out) :: box
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_box_slab(int(n, c_int), int(split_dim, c_int), int(nranks, c_int), &
                    int(rank, c_int), box)
    box%order = [2, 1, 0]
    call finish(st, c_null_ptr, stat)
  end subroutine

  subroutine tide_box_pencil(n, whole_dim, nranks, rank, box, stat)
    integer, intent(in) :: n(3), whole_dim, nranks, rank
    type(tide_box), intent(out) :: box
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_box_pencil(int(n, c_int), int(whole_dim, c_int), int(nranks, c_int), &
                      int(rank, c_int), box)
    box%order = [2, 1, 0]
    call finish(st, c_null_ptr, stat)
  end subroutine

  subroutine tide_box_in_grid(n, grid, rank, box, stat)
    integer, intent(in) :: n(3), grid(3), rank
    type(tide_box), intent(out) :: box
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_box_in_grid(int(n, c_int), int(grid, c_int), int(rank, c_int), box)
    box%order = [2, 1, 0]
    call finish(st, c_null_ptr, stat)
  end subroutine

  subroutine tide_proc_grid(nranks, n, split, grid, stat)
    integer, intent(in) :: nranks, n(3), split(3)
    integer, intent(out) :: grid(3)
    integer, intent(out), optional :: stat
    integer(c_int) :: g(3), st
    st = c_proc_grid(int(nranks, c_int), int(n, c_int), int(split, c_int), g)
    if (st == TIDE_SUCCESS) grid = g
    call finish(st, c_null_ptr, stat)
  end subroutine

  ! ---- array checks --------------------------------------------------------------------------
  !> The address to pass for an array of kind elem, shape shp and contiguity contig, at p, to a
  !> plan that wants kind want over batch fields of box: p, or NULL with the reason in
  !> local_note. The array's first dimension is the box's fastest (order(3)), its last the
  !> slowest, holding the fields one after another.
  function grid_array(p, shp, contig, elem, want, box, batch) result(q)
    type(c_ptr), intent(in) :: p
    integer, intent(in) :: shp(:), elem, want, batch
    logical, intent(in) :: contig
    type(tide_box), intent(in) :: box
    type(c_ptr) :: q
    integer :: e(3)
    e = max(box%hi - box%lo, 0)
    e = [e(box%order(3) + 1), e(box%order(2) + 1), e(box%order(1) + 1) * batch]
    q = c_null_ptr
    if (elem /= want) then
      local_note = 'an array of ' // trim(ELEM_NAME(elem)) // ', not ' // ELEM_NAME(want)
    else if (any(shp /= e)) then
      write (local_note, '(a, 3i6, a, 3i6, a)') 'an array of shape', shp, ', not', e, &
        ' (the box, fastest dimension first)'
    else if (.not. contig) then
      local_note = 'a non-contiguous array'
    else
      q = p
    end if
  end function

  function elem_of(precision, cplx) result(e)
    integer(c_int), intent(in) :: precision
    logical, intent(in) :: cplx
    integer :: e
    e = merge(R8, R4, precision == TIDE_DOUBLE) + merge(2, 0, cplx)
  end function

  !> The status of a call whose arrays this module may have refused: a refusal is
  !> TIDE_ERR_ARGUMENT here even where the library, given NULL for an empty box, succeeded.
  function refused(st) result(r)
    integer(c_int), intent(in) :: st
    integer(c_int) :: r
    r = st
    if (r == TIDE_SUCCESS .and. len_trim(local_note) > 0) r = TIDE_ERR_ARGUMENT
  end function

  ! ---- FFT -----------------------------------------------------------------------------------
  !> Collective. inbox and outbox absent on every rank: the plan's choice (tide_fft_plan_create).
  subroutine tide_fft_plan_create(ctx, n, plan, opts, inbox, outbox, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(in) :: n(3)
    type(tide_fft_plan), intent(out) :: plan
    type(tide_fft_options), intent(in), optional :: opts
    type(tide_box), intent(in), optional, target :: inbox, outbox
    integer, intent(out), optional :: stat
    type(tide_fft_options) :: o
    type(c_ptr) :: ib, ob
    integer(c_int) :: st
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    ib = c_null_ptr
    ob = c_null_ptr
    if (present(inbox)) ib = c_loc(inbox)
    if (present(outbox)) ob = c_loc(outbox)
    local_note = ''
    st = c_fft_plan_create(ctx%p, int(n, c_int), ib, ob, o, plan%p)
    if (st == TIDE_SUCCESS) st = c_fft_plan_boxes(plan%p, plan%inbox, plan%outbox)
    plan%ctx = ctx%p
    plan%in_elem = elem_of(o%precision, o%type == TIDE_C2C)
    plan%out_elem = elem_of(o%precision, .true.)
    plan%batch = o%batch
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_fft_plan_destroy(plan, stat)
    type(tide_fft_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_fft_plan_destroy(plan%p)
    plan%p = c_null_ptr
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine tide_fft_plan_info(plan, info, stat)
    type(tide_fft_plan), intent(in) :: plan
    type(tide_fft_info), intent(out) :: info
    integer, intent(out), optional :: stat
    call finish(c_fft_plan_info(plan%p, info), plan%ctx, stat)
  end subroutine

  function tide_fft_plan_describe(plan) result(s)
    type(tide_fft_plan), intent(in) :: plan
    character(len=:), allocatable :: s
    character(kind=c_char) :: buf(1024)
    s = ''
    if (c_fft_plan_describe(plan%p, buf, size(buf, kind=c_size_t)) /= TIDE_SUCCESS) return
    s = tide_c_string(buf)
  end function

  !> A C string (characters up to the first NUL, or all of them) as a Fortran string: for
  !> tide_device_info's name, pci_bus_id and cpuset.
  function tide_c_string(chars) result(s)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: s
    integer :: i, n
    n = size(chars)
    do i = 1, size(chars)
      if (chars(i) == c_null_char) then
        n = i - 1
        exit
      end if
    end do
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  subroutine fft_call(plan, forward, pin, sin, cin, ein, pout, sout, cout, eout, stat)
    type(tide_fft_plan), intent(in) :: plan
    logical, intent(in) :: forward, cin, cout
    type(c_ptr), intent(in) :: pin, pout
    integer, intent(in) :: sin(3), sout(3), ein, eout
    integer, intent(out), optional :: stat
    type(c_ptr) :: a, b
    local_note = ''
    if (forward) then
      a = grid_array(pin, sin, cin, ein, plan%in_elem, plan%inbox, plan%batch)
      b = grid_array(pout, sout, cout, eout, plan%out_elem, plan%outbox, plan%batch)
      call finish(refused(c_fft_forward(plan%p, a, b)), plan%ctx, stat)
    else
      a = grid_array(pin, sin, cin, ein, plan%out_elem, plan%outbox, plan%batch)
      b = grid_array(pout, sout, cout, eout, plan%in_elem, plan%inbox, plan%batch)
      call finish(refused(c_fft_backward(plan%p, a, b)), plan%ctx, stat)
    end if
  end subroutine

  !> Collective: out = the forward transform of in (in == out: in place).
  subroutine fft_forward_z(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_double_complex), intent(in), target :: in(:, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .true., c_loc(in), shape(in), is_contiguous(in), Z8, &
                  c_loc(out), shape(out), is_contiguous(out), Z8, stat)
  end subroutine

  subroutine fft_forward_c(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_float_complex), intent(in), target :: in(:, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .true., c_loc(in), shape(in), is_contiguous(in), Z4, &
                  c_loc(out), shape(out), is_contiguous(out), Z4, stat)
  end subroutine

  subroutine fft_forward_d(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    real(c_double), intent(in), target :: in(:, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .true., c_loc(in), shape(in), is_contiguous(in), R8, &
                  c_loc(out), shape(out), is_contiguous(out), Z8, stat)
  end subroutine

  subroutine fft_forward_s(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    real(c_float), intent(in), target :: in(:, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .true., c_loc(in), shape(in), is_contiguous(in), R4, &
                  c_loc(out), shape(out), is_contiguous(out), Z4, stat)
  end subroutine

  !> Device arrays (or any memory the plan's location says), unchecked.
  subroutine fft_forward_ptr(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: in, out
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_fft_forward(plan%p, in, out), plan%ctx, stat)
  end subroutine

  !> Collective: out = the backward transform of in.
  subroutine fft_backward_z(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_double_complex), intent(in), target :: in(:, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .false., c_loc(in), shape(in), is_contiguous(in), Z8, &
                  c_loc(out), shape(out), is_contiguous(out), Z8, stat)
  end subroutine

  subroutine fft_backward_c(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_float_complex), intent(in), target :: in(:, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .false., c_loc(in), shape(in), is_contiguous(in), Z4, &
                  c_loc(out), shape(out), is_contiguous(out), Z4, stat)
  end subroutine

  subroutine fft_backward_d(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_double_complex), intent(in), target :: in(:, :, :)
    real(c_double), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .false., c_loc(in), shape(in), is_contiguous(in), Z8, &
                  c_loc(out), shape(out), is_contiguous(out), R8, stat)
  end subroutine

  subroutine fft_backward_s(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    complex(c_float_complex), intent(in), target :: in(:, :, :)
    real(c_float), intent(inout), target :: out(:, :, :)
    integer, intent(out), optional :: stat
    call fft_call(plan, .false., c_loc(in), shape(in), is_contiguous(in), Z4, &
                  c_loc(out), shape(out), is_contiguous(out), R4, stat)
  end subroutine

  subroutine fft_backward_ptr(plan, in, out, stat)
    type(tide_fft_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: in, out
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_fft_backward(plan%p, in, out), plan%ctx, stat)
  end subroutine

  ! ---- Poisson -------------------------------------------------------------------------------
  !> Collective. box absent on every rank: the solver's choice (see its box in plan%box).
  subroutine tide_poisson_plan_create(ctx, n, plan, opts, box, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(in) :: n(3)
    type(tide_poisson_plan), intent(out) :: plan
    type(tide_poisson_options), intent(in), optional :: opts
    type(tide_box), intent(in), optional, target :: box
    integer, intent(out), optional :: stat
    type(tide_poisson_options) :: o
    type(c_ptr) :: b
    integer(c_int) :: st
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    b = c_null_ptr
    if (present(box)) b = c_loc(box)
    local_note = ''
    st = c_poisson_plan_create(ctx%p, int(n, c_int), b, o, plan%p)
    if (st == TIDE_SUCCESS) st = c_poisson_plan_box(plan%p, plan%box)
    plan%ctx = ctx%p
    plan%elem = elem_of(o%precision, .false.)
    plan%batch = o%batch
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_poisson_plan_destroy(plan, stat)
    type(tide_poisson_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_poisson_plan_destroy(plan%p)
    plan%p = c_null_ptr
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine tide_poisson_plan_info(plan, info, stat)
    type(tide_poisson_plan), intent(in) :: plan
    type(tide_poisson_info), intent(out) :: info
    integer, intent(out), optional :: stat
    call finish(c_poisson_plan_info(plan%p, info), plan%ctx, stat)
  end subroutine

  !> The mean of each field of f in the last solve.
  subroutine tide_poisson_mean(plan, mean, stat)
    type(tide_poisson_plan), intent(in) :: plan
    real(c_double), intent(out) :: mean(:)
    integer, intent(out), optional :: stat
    real(c_double) :: m(plan%batch)
    integer(c_int) :: st
    st = c_poisson_mean(plan%p, m)
    if (st == TIDE_SUCCESS) mean(1:min(size(mean), plan%batch)) = m(1:min(size(mean), plan%batch))
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine poisson_call(plan, pf, sf, cf, pu, su, cu, elem, stat)
    type(tide_poisson_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: pf, pu
    integer, intent(in) :: sf(3), su(3), elem
    logical, intent(in) :: cf, cu
    integer, intent(out), optional :: stat
    type(c_ptr) :: f, u
    local_note = ''
    f = grid_array(pf, sf, cf, elem, plan%elem, plan%box, plan%batch)
    u = grid_array(pu, su, cu, elem, plan%elem, plan%box, plan%batch)
    call finish(refused(c_poisson_solve(plan%p, f, u)), plan%ctx, stat)
  end subroutine

  !> Collective: u with lap(u) - alpha u = f (f == u: in place).
  subroutine poisson_solve_d(plan, f, u, stat)
    type(tide_poisson_plan), intent(in) :: plan
    real(c_double), intent(in), target :: f(:, :, :)
    real(c_double), intent(inout), target :: u(:, :, :)
    integer, intent(out), optional :: stat
    call poisson_call(plan, c_loc(f), shape(f), is_contiguous(f), c_loc(u), shape(u), &
                      is_contiguous(u), R8, stat)
  end subroutine

  subroutine poisson_solve_s(plan, f, u, stat)
    type(tide_poisson_plan), intent(in) :: plan
    real(c_float), intent(in), target :: f(:, :, :)
    real(c_float), intent(inout), target :: u(:, :, :)
    integer, intent(out), optional :: stat
    call poisson_call(plan, c_loc(f), shape(f), is_contiguous(f), c_loc(u), shape(u), &
                      is_contiguous(u), R4, stat)
  end subroutine

  subroutine poisson_solve_ptr(plan, f, u, stat)
    type(tide_poisson_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: f, u
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_poisson_solve(plan%p, f, u), plan%ctx, stat)
  end subroutine

  ! ---- stencils ------------------------------------------------------------------------------
  !> Collective. box absent on every rank: the plan's choice (plan%box).
  subroutine tide_stencil_plan_create(ctx, n, plan, opts, box, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(in) :: n(3)
    type(tide_stencil_plan), intent(out) :: plan
    type(tide_stencil_options), intent(in), optional :: opts
    type(tide_box), intent(in), optional, target :: box
    integer, intent(out), optional :: stat
    type(tide_stencil_options) :: o
    type(tide_stencil_info) :: info
    type(c_ptr) :: b
    integer(c_int) :: st
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    b = c_null_ptr
    if (present(box)) b = c_loc(box)
    local_note = ''
    st = c_stencil_plan_create(ctx%p, int(n, c_int), b, o, plan%p)
    if (st == TIDE_SUCCESS) st = c_stencil_plan_info(plan%p, info)
    if (st == TIDE_SUCCESS) plan%box = info%box
    plan%ctx = ctx%p
    plan%elem = elem_of(o%precision, .false.)
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_stencil_plan_destroy(plan, stat)
    type(tide_stencil_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_stencil_plan_destroy(plan%p)
    plan%p = c_null_ptr
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine tide_stencil_plan_info(plan, info, stat)
    type(tide_stencil_plan), intent(in) :: plan
    type(tide_stencil_info), intent(out) :: info
    integer, intent(out), optional :: stat
    call finish(c_stencil_plan_info(plan%p, info), plan%ctx, stat)
  end subroutine

  !> Collective: advances u (in place) by steps time steps.
  subroutine stencil_run_d(plan, u, steps, stat)
    type(tide_stencil_plan), intent(in) :: plan
    real(c_double), intent(inout), target :: u(:, :, :)
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(refused(c_stencil_run(plan%p, grid_array(c_loc(u), shape(u), &
      is_contiguous(u), R8, plan%elem, plan%box, 1), int(steps, c_long_long))), plan%ctx, stat)
  end subroutine

  subroutine stencil_run_s(plan, u, steps, stat)
    type(tide_stencil_plan), intent(in) :: plan
    real(c_float), intent(inout), target :: u(:, :, :)
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(refused(c_stencil_run(plan%p, grid_array(c_loc(u), shape(u), &
      is_contiguous(u), R4, plan%elem, plan%box, 1), int(steps, c_long_long))), plan%ctx, stat)
  end subroutine

  subroutine stencil_run_ptr(plan, u, steps, stat)
    type(tide_stencil_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: u
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_stencil_run(plan%p, u, int(steps, c_long_long)), plan%ctx, stat)
  end subroutine

  ! ---- band matrices -------------------------------------------------------------------------
  subroutine tide_band_options_init(o)
    type(tide_band_options), intent(out) :: o
    call c_band_options_init(o)
  end subroutine

  !> Collective: x <- A^steps x for an n x n band matrix A, this rank owning the rows [lo, hi)
  !> (counted from 0, as in C); opts%diagonals as the type says.
  subroutine tide_band_plan_create(ctx, n, lo, hi, plan, opts, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(in) :: n, lo, hi
    type(tide_band_plan), intent(out) :: plan
    type(tide_band_options), intent(in), optional :: opts
    integer, intent(out), optional :: stat
    type(tide_band_options) :: o
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    local_note = ''
    plan%ctx = ctx%p
    plan%elem = elem_of(o%precision, .false.)
    plan%rows = hi - lo
    call finish(c_band_plan_create(ctx%p, int(n, c_int), int(lo, c_int), int(hi, c_int), o, &
      plan%p), ctx%p, stat)
  end subroutine

  subroutine tide_band_plan_destroy(plan, stat)
    type(tide_band_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_band_plan_destroy(plan%p)
    plan%p = c_null_ptr
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine tide_band_plan_info(plan, info, stat)
    type(tide_band_plan), intent(in) :: plan
    type(tide_band_info), intent(out) :: info
    integer, intent(out), optional :: stat
    call finish(c_band_plan_info(plan%p, info), plan%ctx, stat)
  end subroutine

  function tide_band_plan_describe(plan) result(s)
    type(tide_band_plan), intent(in) :: plan
    character(len=:), allocatable :: s
    character(kind=c_char) :: buf(1024)
    s = ''
    if (c_band_plan_describe(plan%p, buf, size(buf, kind=c_size_t)) /= TIDE_SUCCESS) return
    s = tide_c_string(buf)
  end function

  subroutine tide_band_plan_set_stream(plan, stream, stat)
    type(tide_band_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: stream
    integer, intent(out), optional :: stat
    call finish(c_band_plan_set_stream(plan%p, stream), plan%ctx, stat)
  end subroutine

  !> x's address where it holds this rank's rows in the plan's kind, contiguous; else NULL,
  !> the reason in local_note (the library then refuses the call on every rank alike).
  function band_array(x, rows, contiguous, kind, plan) result(p)
    type(c_ptr), intent(in) :: x
    integer, intent(in) :: rows, kind
    logical, intent(in) :: contiguous
    type(tide_band_plan), intent(in) :: plan
    type(c_ptr) :: p
    p = c_null_ptr
    if (kind /= plan%elem) then
      local_note = 'x is ' // trim(ELEM_NAME(kind)) // ', the plan takes ' // &
        trim(ELEM_NAME(plan%elem))
    else if (.not. contiguous) then
      local_note = 'x is not contiguous'
    else if (rows /= plan%rows) then
      write (local_note, '(a, i0, a, i0)') 'x has ', rows, ' rows; this rank owns ', plan%rows
    else
      p = x
    end if
  end function

  !> Collective: x <- A^steps x on this rank's rows, in place.
  subroutine band_run_d(plan, x, steps, stat)
    type(tide_band_plan), intent(in) :: plan
    real(c_double), intent(inout), target :: x(:)
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(refused(c_band_run(plan%p, band_array(c_loc(x), size(x), is_contiguous(x), &
      R8, plan), int(steps, c_long_long))), plan%ctx, stat)
  end subroutine

  subroutine band_run_s(plan, x, steps, stat)
    type(tide_band_plan), intent(in) :: plan
    real(c_float), intent(inout), target :: x(:)
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(refused(c_band_run(plan%p, band_array(c_loc(x), size(x), is_contiguous(x), &
      R4, plan), int(steps, c_long_long))), plan%ctx, stat)
  end subroutine

  subroutine band_run_ptr(plan, x, steps, stat)
    type(tide_band_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: x
    integer, intent(in) :: steps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_band_run(plan%p, x, int(steps, c_long_long)), plan%ctx, stat)
  end subroutine

  ! ---- matrix multiply -----------------------------------------------------------------------
  !> Collective: C = alpha op(A) op(B) + beta C. Arrays are this rank's blocks (tide.h), in
  !> the plan's order (column major, Fortran's, by default).
  subroutine tide_gemm_plan_create(ctx, m, n, k, plan, opts, stat)
    type(tide_context), intent(in) :: ctx
    integer(c_long_long), intent(in) :: m, n, k
    type(tide_gemm_plan), intent(out) :: plan
    type(tide_gemm_options), intent(in), optional :: opts
    integer, intent(out), optional :: stat
    type(tide_gemm_options) :: o
    type(tide_gemm_info) :: info
    integer(c_long_long) :: rows(2), cols(2), ka(2), kb(2)
    integer(c_int) :: st
    if (present(opts)) o = opts
    o%size = c_sizeof(o)
    local_note = ''
    st = c_gemm_plan_create(ctx%p, m, n, k, o, plan%p)
    if (st == TIDE_SUCCESS) st = c_gemm_plan_info(plan%p, info)
    plan%ctx = ctx%p
    plan%elem = elem_of(o%precision, o%domain == TIDE_COMPLEX)
    plan%order = o%order
    if (st == TIDE_SUCCESS) then
      rows = block(o%blocks(1), ctx%rank / info%grid(2), m, info%grid(1))
      cols = block(o%blocks(2), mod(ctx%rank, info%grid(2)), n, info%grid(2))
      ka = block(o%blocks(3), mod(ctx%rank, info%grid(2)), k, info%grid(2))
      kb = block(o%blocks(4), ctx%rank / info%grid(2), k, info%grid(1))
      plan%a = [rows(2) - rows(1), ka(2) - ka(1)]
      if (o%transa /= TIDE_NOTRANS) plan%a = plan%a([2, 1])
      plan%b = [kb(2) - kb(1), cols(2) - cols(1)]
      if (o%transb /= TIDE_NOTRANS) plan%b = plan%b([2, 1])
      plan%c = [rows(2) - rows(1), cols(2) - cols(1)]
      plan%lda = o%lda
      plan%ldb = o%ldb
      plan%ldc = o%ldc
    end if
    call finish(st, ctx%p, stat)
  contains
    !> Part i of ext over p parts: the user's boundaries (o%blocks, p + 1 of them) when given,
    !> else balanced.
    function block(bounds, i, ext, p) result(b)
      type(c_ptr), intent(in) :: bounds
      integer, intent(in) :: i
      integer(c_long_long), intent(in) :: ext
      integer(c_int), intent(in) :: p
      integer(c_long_long) :: b(2)
      integer(c_long_long), pointer :: bnd(:)
      if (c_associated(bounds)) then
        call c_f_pointer(bounds, bnd, [p + 1])
        b = bnd(i + 1:i + 2)
      else
        b = [i * ext / p, (i + 1) * ext / p]
      end if
    end function
  end subroutine

  subroutine tide_gemm_plan_destroy(plan, stat)
    type(tide_gemm_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    st = c_gemm_plan_destroy(plan%p)
    plan%p = c_null_ptr
    call finish(st, plan%ctx, stat)
  end subroutine

  subroutine tide_gemm_plan_info(plan, info, stat)
    type(tide_gemm_plan), intent(in) :: plan
    type(tide_gemm_info), intent(out) :: info
    integer, intent(out), optional :: stat
    call finish(c_gemm_plan_info(plan%p, info), plan%ctx, stat)
  end subroutine

  !> The address of a matrix block: its shape the stored block's (rows, columns; row major:
  !> the array holds the transpose, columns first), its first dimension its leading one.
  function matrix(p, shp, ld1, elem, plan, want, ld) result(q)
    type(c_ptr), intent(in) :: p
    integer, intent(in) :: shp(2), elem
    integer(c_long_long), intent(in) :: ld1, want(2), ld
    type(tide_gemm_plan), intent(in) :: plan
    type(c_ptr) :: q
    integer(c_long_long) :: w(2), lead
    w = want
    if (plan%order == TIDE_ROW_MAJOR) w = want([2, 1])
    lead = merge(ld, w(1), ld > 0)
    q = c_null_ptr
    if (elem /= plan%elem) then
      local_note = 'a matrix of ' // trim(ELEM_NAME(elem)) // ', not ' // ELEM_NAME(plan%elem)
    else if (any(shp /= w)) then
      write (local_note, '(a, 2i8, a, 2i8)') 'a matrix of shape', shp, ', not', w
    else if (w(2) > 1 .and. ld1 /= lead) then
      write (local_note, '(a, i8, a, i8)') 'a matrix of leading dimension', ld1, ', not', lead
    else
      q = p
    end if
  end function

  subroutine gemm_call(plan, alpha, beta, pa, sa, la, pb, sb, lb, pc, sc, lc, elem, stat)
    type(tide_gemm_plan), intent(in) :: plan
    complex(c_double_complex), intent(in) :: alpha, beta
    type(c_ptr), intent(in) :: pa, pb, pc
    integer, intent(in) :: sa(2), sb(2), sc(2), elem
    integer(c_long_long), intent(in) :: la, lb, lc
    integer, intent(out), optional :: stat
    type(c_ptr) :: a, b, c
    local_note = ''
    a = matrix(pa, sa, la, elem, plan, plan%a, plan%lda)
    b = matrix(pb, sb, lb, elem, plan, plan%b, plan%ldb)
    c = matrix(pc, sc, lc, elem, plan, plan%c, plan%ldc)
    call finish(refused(c_gemm_execute_complex(plan%p, [real(alpha), aimag(alpha)], a, b, &
                                               [real(beta), aimag(beta)], c)), plan%ctx, stat)
  end subroutine

  !> The distance in elements between a matrix's columns (its leading dimension), from the
  !> addresses of its first two columns; the rows' step must be 1.
  function leading(p1, p2, q1, esize, rows) result(ld)
    type(c_ptr), intent(in) :: p1, p2, q1
    integer, intent(in) :: esize, rows
    integer(c_long_long) :: ld
    integer(c_intptr_t) :: a, b, c
    a = transfer(p1, a)
    b = transfer(p2, b)
    c = transfer(q1, c)
    ld = (b - a) / esize
    if (rows > 1 .and. c - a /= esize) ld = -1
  end function

  subroutine gemm_execute_d(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    real(c_double), intent(in) :: alpha, beta
    real(c_double), intent(in), target :: a(:, :), b(:, :)
    real(c_double), intent(inout), target :: c(:, :)
    integer, intent(out), optional :: stat
    call gemm_call(plan, cmplx(alpha, 0, c_double), cmplx(beta, 0, c_double), &
      c_loc(a), shape(a), ld_d(a), c_loc(b), shape(b), ld_d(b), c_loc(c), shape(c), ld_d(c), &
      R8, stat)
  end subroutine

  subroutine gemm_execute_s(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    real(c_double), intent(in) :: alpha, beta
    real(c_float), intent(in), target :: a(:, :), b(:, :)
    real(c_float), intent(inout), target :: c(:, :)
    integer, intent(out), optional :: stat
    call gemm_call(plan, cmplx(alpha, 0, c_double), cmplx(beta, 0, c_double), &
      c_loc(a), shape(a), ld_s(a), c_loc(b), shape(b), ld_s(b), c_loc(c), shape(c), ld_s(c), &
      R4, stat)
  end subroutine

  subroutine gemm_execute_z(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    complex(c_double_complex), intent(in) :: alpha, beta
    complex(c_double_complex), intent(in), target :: a(:, :), b(:, :)
    complex(c_double_complex), intent(inout), target :: c(:, :)
    integer, intent(out), optional :: stat
    call gemm_call(plan, alpha, beta, c_loc(a), shape(a), ld_z(a), c_loc(b), shape(b), &
      ld_z(b), c_loc(c), shape(c), ld_z(c), Z8, stat)
  end subroutine

  subroutine gemm_execute_c(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    complex(c_double_complex), intent(in) :: alpha, beta
    complex(c_float_complex), intent(in), target :: a(:, :), b(:, :)
    complex(c_float_complex), intent(inout), target :: c(:, :)
    integer, intent(out), optional :: stat
    call gemm_call(plan, alpha, beta, c_loc(a), shape(a), ld_c(a), c_loc(b), shape(b), &
      ld_c(b), c_loc(c), shape(c), ld_c(c), Z4, stat)
  end subroutine

  subroutine gemm_execute_ptr(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    real(c_double), intent(in) :: alpha, beta
    type(c_ptr), intent(in) :: a, b, c
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_gemm_execute_complex(plan%p, [alpha, 0d0], a, b, [beta, 0d0], c), &
                plan%ctx, stat)
  end subroutine

  subroutine gemm_execute_ptr_complex(plan, alpha, a, b, beta, c, stat)
    type(tide_gemm_plan), intent(in) :: plan
    complex(c_double_complex), intent(in) :: alpha, beta
    type(c_ptr), intent(in) :: a, b, c
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_gemm_execute_complex(plan%p, [real(alpha), aimag(alpha)], a, b, &
                                       [real(beta), aimag(beta)], c), plan%ctx, stat)
  end subroutine

  ! The leading dimension of a matrix section (elements between its columns; -1 when its
  ! rows are not adjacent), 0 for an empty one: a column-major block may be a section of a
  ! larger array, as lda allows.
  function ld_d(a) result(ld)
    real(c_double), intent(in), target :: a(:, :)
    integer(c_long_long) :: ld
    ld = 0
    if (size(a) == 0) return
    ld = size(a, 1)
    if (size(a, 2) > 1) ld = leading(c_loc(a(1, 1)), c_loc(a(1, 2)), &
                                     c_loc(a(min(2, size(a, 1)), 1)), 8, size(a, 1))
  end function

  function ld_s(a) result(ld)
    real(c_float), intent(in), target :: a(:, :)
    integer(c_long_long) :: ld
    ld = 0
    if (size(a) == 0) return
    ld = size(a, 1)
    if (size(a, 2) > 1) ld = leading(c_loc(a(1, 1)), c_loc(a(1, 2)), &
                                     c_loc(a(min(2, size(a, 1)), 1)), 4, size(a, 1))
  end function

  function ld_z(a) result(ld)
    complex(c_double_complex), intent(in), target :: a(:, :)
    integer(c_long_long) :: ld
    ld = 0
    if (size(a) == 0) return
    ld = size(a, 1)
    if (size(a, 2) > 1) ld = leading(c_loc(a(1, 1)), c_loc(a(1, 2)), &
                                     c_loc(a(min(2, size(a, 1)), 1)), 16, size(a, 1))
  end function

  function ld_c(a) result(ld)
    complex(c_float_complex), intent(in), target :: a(:, :)
    integer(c_long_long) :: ld
    ld = 0
    if (size(a) == 0) return
    ld = size(a, 1)
    if (size(a, 2) > 1) ld = leading(c_loc(a(1, 1)), c_loc(a(1, 2)), &
                                     c_loc(a(min(2, size(a, 1)), 1)), 8, size(a, 1))
  end function
  ! ---- context queries, measurements, memory ------------------------------------------------
  subroutine tide_context_threads(ctx, threads, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(out) :: threads
    integer, intent(out), optional :: stat
    integer(c_int) :: t, st
    local_note = ''
    st = c_context_threads(ctx%p, t)
    if (st == TIDE_SUCCESS) threads = t
    call finish(st, ctx%p, stat)
  end subroutine

  !> Progress lines of long calls on rank 0 every `seconds` (0: none; tide_context_set_progress).
  subroutine tide_context_set_progress(ctx, seconds, stat)
    type(tide_context), intent(in) :: ctx
    real(c_double), intent(in) :: seconds
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    local_note = ''
    st = c_context_set_progress(ctx%p, seconds)
    call finish(st, ctx%p, stat)
  end subroutine

  !> Why the context uses or does not use a GPU (tide_context_gpu_status).
  function tide_context_gpu_status(ctx) result(s)
    type(tide_context), intent(in) :: ctx
    character(len=:), allocatable :: s
    s = c_string(c_context_gpu_status(ctx%p))
  end function

  !> Local: this rank's GPU (device -1 on a CPU context); strings through tide_c_string.
  subroutine tide_context_device(ctx, info, stat)
    type(tide_context), intent(in) :: ctx
    type(tide_device_info), intent(out) :: info
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_context_device(ctx%p, info), ctx%p, stat)
  end subroutine

  !> Local (together = .true.: collective, every rank at once) transfer rates in GB/s of
  !> arrays of bytes (0: the library's default).
  subroutine tide_measure_rates(ctx, bytes, rates, together, stat)
    type(tide_context), intent(in) :: ctx
    integer(c_size_t), intent(in) :: bytes
    type(tide_rates), intent(out) :: rates
    logical, intent(in), optional :: together
    integer, intent(out), optional :: stat
    logical :: all
    all = .false.
    if (present(together)) all = together
    local_note = ''
    if (all) then
      call finish(c_measure_rates_together(ctx%p, bytes, rates), ctx%p, stat)
    else
      call finish(c_measure_rates(ctx%p, bytes, rates), ctx%p, stat)
    end if
  end subroutine

  !> Collective: the all-to-all rate of an exchange (TIDE_EXCHANGE_*), GB/s leaving each rank.
  subroutine tide_measure_exchange(ctx, how, bytes, gbps, stat)
    type(tide_context), intent(in) :: ctx
    integer, intent(in) :: how
    integer(c_size_t), intent(in) :: bytes
    real(c_double), intent(out) :: gbps
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_measure_exchange(ctx%p, int(how, c_int), bytes, gbps), ctx%p, stat)
  end subroutine

  !> Local: bytes of zeroed host memory (pinned on a CUDA context); c_f_pointer makes it an
  !> array. Free with tide_host_free on the same context.
  subroutine tide_host_alloc(ctx, bytes, ptr, stat)
    type(tide_context), intent(in) :: ctx
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr), intent(out) :: ptr
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    type(c_ptr) :: p
    local_note = ''
    st = c_host_alloc(ctx%p, bytes, p)
    if (st == TIDE_SUCCESS) ptr = p
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_host_free(ctx, ptr, stat)
    type(tide_context), intent(in) :: ctx
    type(c_ptr), intent(inout) :: ptr
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    local_note = ''
    st = c_host_free(ctx%p, ptr)
    if (st == TIDE_SUCCESS) ptr = c_null_ptr
    call finish(st, ctx%p, stat)
  end subroutine

  !> Local: bytes of the rank's GPU memory (CUDA contexts; else TIDE_ERR_UNSUPPORTED), for
  !> the type(c_ptr) forms of the plans' calls with location = TIDE_LOCATION_DEVICE.
  subroutine tide_device_alloc(ctx, bytes, ptr, stat)
    type(tide_context), intent(in) :: ctx
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr), intent(out) :: ptr
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    type(c_ptr) :: p
    local_note = ''
    st = c_device_alloc(ctx%p, bytes, p)
    if (st == TIDE_SUCCESS) ptr = p
    call finish(st, ctx%p, stat)
  end subroutine

  subroutine tide_device_free(ctx, ptr, stat)
    type(tide_context), intent(in) :: ctx
    type(c_ptr), intent(inout) :: ptr
    integer, intent(out), optional :: stat
    integer(c_int) :: st
    local_note = ''
    st = c_device_free(ctx%p, ptr)
    if (st == TIDE_SUCCESS) ptr = c_null_ptr
    call finish(st, ctx%p, stat)
  end subroutine

  !> Local: bytes from src to dst, host or device memory either (c_loc of a host array,
  !> a pointer from tide_device_alloc); returns once the copy is done.
  subroutine tide_copy(ctx, dst, src, bytes, stat)
    type(tide_context), intent(in) :: ctx
    type(c_ptr), intent(in) :: dst, src
    integer(c_size_t), intent(in) :: bytes
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_copy(ctx%p, dst, src, bytes), ctx%p, stat)
  end subroutine

  ! ---- plans: cost, describe, stream ----------------------------------------------------------
  !> Local: what one transform does on this rank; direction -1 forward, +1 backward.
  subroutine tide_fft_plan_cost(plan, direction, cost, stat)
    type(tide_fft_plan), intent(in) :: plan
    integer, intent(in) :: direction
    type(tide_fft_cost), intent(out) :: cost
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_fft_plan_cost(plan%p, int(direction, c_int), cost), plan%ctx, stat)
  end subroutine

  subroutine tide_poisson_plan_cost(plan, cost, stat)
    type(tide_poisson_plan), intent(in) :: plan
    type(tide_fft_cost), intent(out) :: cost
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_poisson_plan_cost(plan%p, cost), plan%ctx, stat)
  end subroutine

  function tide_poisson_plan_describe(plan) result(s)
    type(tide_poisson_plan), intent(in) :: plan
    character(len=:), allocatable :: s
    character(kind=c_char) :: buf(1024)
    s = ''
    if (c_poisson_plan_describe(plan%p, buf, size(buf, kind=c_size_t)) /= TIDE_SUCCESS) return
    s = tide_c_string(buf)
  end function

  function tide_stencil_plan_describe(plan) result(s)
    type(tide_stencil_plan), intent(in) :: plan
    character(len=:), allocatable :: s
    character(kind=c_char) :: buf(1024)
    s = ''
    if (c_stencil_plan_describe(plan%p, buf, size(buf, kind=c_size_t)) /= TIDE_SUCCESS) return
    s = tide_c_string(buf)
  end function

  function tide_gemm_plan_describe(plan) result(s)
    type(tide_gemm_plan), intent(in) :: plan
    character(len=:), allocatable :: s
    character(kind=c_char) :: buf(1024)
    s = ''
    if (c_gemm_plan_describe(plan%p, buf, size(buf, kind=c_size_t)) /= TIDE_SUCCESS) return
    s = tide_c_string(buf)
  end function

  !> Local: the CUDA stream later calls order themselves after (c_null_ptr: the legacy default
  !> stream; a CUDA Fortran stream: transfer(s, c_null_ptr)). Ignored on the CPU.
  subroutine tide_fft_plan_set_stream(plan, stream, stat)
    type(tide_fft_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: stream
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_fft_plan_set_stream(plan%p, stream), plan%ctx, stat)
  end subroutine

  subroutine tide_poisson_plan_set_stream(plan, stream, stat)
    type(tide_poisson_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: stream
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_poisson_plan_set_stream(plan%p, stream), plan%ctx, stat)
  end subroutine

  subroutine tide_stencil_plan_set_stream(plan, stream, stat)
    type(tide_stencil_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: stream
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_stencil_plan_set_stream(plan%p, stream), plan%ctx, stat)
  end subroutine

  subroutine tide_gemm_plan_set_stream(plan, stream, stat)
    type(tide_gemm_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: stream
    integer, intent(out), optional :: stat
    local_note = ''
    call finish(c_gemm_plan_set_stream(plan%p, stream), plan%ctx, stat)
  end subroutine
end module tide
