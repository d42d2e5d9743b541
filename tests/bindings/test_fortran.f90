! test_fortran: the Fortran module on 1 to 4 ranks against independent oracles: a direct DFT
! for the transforms (c2c and r2c, double and float), discrete eigenfunctions for Poisson
! (periodic and Dirichlet faces, Helmholtz), a naive loop for a stencil, matmul for GEMM (real
! and complex, transposed); the module's types against C's sizes and defaults; bad input refused
! with the same status on every rank (boxes with a hole, an array of the wrong shape, kind or
! contiguity on one rank).
program test_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use tide
  implicit none
  interface
    function tide_test_sizeof(i) bind(c)
      import :: c_int, c_size_t
      integer(c_int), value :: i
      integer(c_size_t) :: tide_test_sizeof
    end function
    ! the C library's answers for the same context or plan (c_results.c)
    function tide_test_threads(ctx) bind(c)
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx
      integer(c_int) :: tide_test_threads
    end function
    subroutine tide_test_gpu_status(ctx, buf, len) bind(c)
      import :: c_ptr, c_char, c_size_t
      type(c_ptr), value :: ctx
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
    end subroutine
    function tide_test_device(ctx, device, cuda_aware, nccl, name, len) bind(c)
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: device, cuda_aware, nccl
      character(kind=c_char), intent(out) :: name(*)
      integer(c_size_t), value :: len
      integer(c_int) :: tide_test_device
    end function
    function tide_test_fft_cost(plan, direction, out) bind(c)
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: plan
      integer(c_int), value :: direction
      real(c_double), intent(out) :: out(9)
      integer(c_int) :: tide_test_fft_cost
    end function
    function tide_test_poisson_cost(plan, out) bind(c)
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: plan
      real(c_double), intent(out) :: out(9)
      integer(c_int) :: tide_test_poisson_cost
    end function
    function tide_test_describe(kind, plan, buf, len) bind(c)
      import :: c_int, c_ptr, c_char, c_size_t
      integer(c_int), value :: kind
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: tide_test_describe
    end function
  end interface
  real(c_double), parameter :: pi = acos(-1d0)
  integer :: rank, nranks, failures, total
  type(tide_context) :: ctx

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  call test_types()
  call tide_context_create(MPI_COMM_WORLD, ctx)
  call test_fft()
  call test_poisson()
  call test_stencil()
  call test_band()
  call test_gemm()
  call test_errors()
  call test_c_api()
  call tide_context_destroy(ctx)
  call test_integer_comm()
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, a, i0, a)', 'test_fortran on ', nranks, ' ranks: ', &
    merge('FAIL', 'ok  ', total > 0), total, ' failures'
  call MPI_Finalize()
  if (total > 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a, i0, 2a)', 'rank ', rank, ': FAIL ', what
    end if
  end subroutine

  subroutine test_types()
    type(tide_context_options) :: co, cc
    type(tide_fft_options) :: fo, fc
    type(tide_poisson_options) :: po, pc
    type(tide_stencil_options) :: so, sc
    type(tide_gemm_options) :: go, gc
    type(tide_box) :: b
    type(tide_fft_info) :: fi
    type(tide_poisson_info) :: pi_
    type(tide_stencil_info) :: si
    type(tide_gemm_info) :: gi
    type(tide_band_options) :: bo, bc
    type(tide_band_info) :: bi
    integer(c_size_t) :: f(12)
    integer :: i
    character(len=80) :: what
    f = [c_sizeof(b), c_sizeof(co), c_sizeof(fo), c_sizeof(fi), c_sizeof(po), c_sizeof(pi_), &
         c_sizeof(so), c_sizeof(si), c_sizeof(go), c_sizeof(gi), c_sizeof(bo), c_sizeof(bi)]
    call tide_band_options_init(bc)
    call check(bo%precision == bc%precision .and. bo%backend == bc%backend .and. &
      bo%location == bc%location .and. bo%kl == bc%kl .and. bo%ku == bc%ku .and. &
      bo%steps_per_pass == bc%steps_per_pass .and. bo%slab_rows == bc%slab_rows, &
      'tide_band_options defaults')
    do i = 1, 12
      write (what, '(a, i0, a, i0, a, i0)') 'type ', i, ': Fortran size ', f(i), ', C ', &
        tide_test_sizeof(i - 1)
      call check(f(i) == tide_test_sizeof(int(i - 1, c_int)), what)
    end do
    ! the types' defaults are the library's
    call tide_context_options_init(cc)
    call check(co%backend == cc%backend .and. co%threads == cc%threads .and. &
      co%device_budget == cc%device_budget .and. co%bind == cc%bind .and. &
      co%device == cc%device, 'tide_context_options defaults')
    call tide_fft_options_init(fc)
    call check(fo%type == fc%type .and. fo%precision == fc%precision .and. &
      fo%backend == fc%backend .and. fo%decomposition == fc%decomposition .and. &
      fo%exchange == fc%exchange .and. fo%scaling == fc%scaling .and. &
      fo%planning == fc%planning .and. fo%batch == fc%batch .and. &
      fo%transposed_out == fc%transposed_out .and. fo%location == fc%location .and. &
      fo%async == fc%async .and. fo%arrays_kept == fc%arrays_kept, 'tide_fft_options defaults')
    call tide_poisson_options_init(pc)
    call check(po%precision == pc%precision .and. po%batch == pc%batch .and. &
      all(po%bc == pc%bc) .and. maxval(abs(po%h - pc%h)) < tiny(1d0) .and. &
      abs(po%alpha - pc%alpha) < tiny(1d0) .and. &
      po%eigen == pc%eigen .and. po%out_of_card == pc%out_of_card .and. &
      po%decomposition == pc%decomposition, 'tide_poisson_options defaults')
    call tide_stencil_options_init(sc)
    call check(so%precision == sc%precision .and. so%shape == sc%shape .and. &
      all(so%bc == sc%bc) .and. so%fuse == sc%fuse .and. so%radius == sc%radius .and. &
      so%npoints == sc%npoints .and. so%level_steps == sc%level_steps .and. &
      so%overlap == sc%overlap .and. so%exchange == sc%exchange, &
      'tide_stencil_options defaults')
    call tide_gemm_options_init(gc)
    call check(go%precision == gc%precision .and. go%order == gc%order .and. &
      go%transa == gc%transa .and. go%transb == gc%transb .and. go%lda == gc%lda .and. &
      all(go%grid == gc%grid) .and. go%gpus == gc%gpus .and. go%share_a == gc%share_a .and. &
      go%domain == gc%domain .and. go%tile == gc%tile .and. go%panel == gc%panel .and. &
      go%exchange == gc%exchange, 'tide_gemm_options defaults')
  end subroutine

  ! a deterministic value of point (x, y, z), the same on every rank
  pure function val(x, y, z, s) result(v)
    integer, intent(in) :: x, y, z, s
    real(c_double) :: v
    v = sin(1.3d0 * x + 0.7d0 * y * y + 0.31d0 * z + s) + 0.25d0 * cos(0.9d0 * x * z + s)
  end function

  ! the direct DFT of g at (kx, ky, kz), sign -1 (forward)
  function dft(g, n, kx, ky, kz) result(s)
    complex(c_double_complex), intent(in) :: g(0:, 0:, 0:)
    integer, intent(in) :: n(3), kx, ky, kz
    complex(c_double_complex) :: s
    integer :: x, y, z
    s = 0
    do z = 0, n(3) - 1
      do y = 0, n(2) - 1
        do x = 0, n(1) - 1
          s = s + g(x, y, z) * exp(cmplx(0d0, -2 * pi * (dble(kx * x) / n(1) + &
            dble(ky * y) / n(2) + dble(kz * z) / n(3)), c_double_complex))
        end do
      end do
    end do
  end function

  subroutine test_fft()
    integer, parameter :: n(3) = [5, 7, 3]
    type(tide_fft_options) :: o
    type(tide_fft_plan) :: plan
    type(tide_box) :: ib, ob
    complex(c_double_complex) :: g(0:n(1) - 1, 0:n(2) - 1, 0:n(3) - 1)
    complex(c_double_complex), allocatable :: a(:, :, :), b(:, :, :), back(:, :, :)
    real(c_float), allocatable :: r(:, :, :), rback(:, :, :)
    complex(c_float_complex), allocatable :: c(:, :, :)
    real(c_double) :: err, scale
    integer :: x, y, z, st
    do z = 0, n(3) - 1
      do y = 0, n(2) - 1
        do x = 0, n(1) - 1
          g(x, y, z) = cmplx(val(x, y, z, 0), val(x, y, z, 1), c_double_complex)
        end do
      end do
    end do
    ! c2c double: x-slabs in, z-pencils out, full scaling
    call tide_box_slab(n, 0, nranks, rank, ib)
    call tide_box_pencil(n, 2, nranks, rank, ob)
    o%scaling = TIDE_SCALE_FULL
    call tide_fft_plan_create(ctx, n, plan, o, ib, ob, stat=st)
    call check(st == TIDE_SUCCESS, 'fft c2c plan: ' // tide_last_error(ctx))
    allocate(a(ib%lo(1):ib%hi(1) - 1, ib%lo(2):ib%hi(2) - 1, ib%lo(3):ib%hi(3) - 1))
    allocate(back, mold=a)
    allocate(b(ob%lo(1):ob%hi(1) - 1, ob%lo(2):ob%hi(2) - 1, ob%lo(3):ob%hi(3) - 1))
    a = g(ib%lo(1):ib%hi(1) - 1, ib%lo(2):ib%hi(2) - 1, ib%lo(3):ib%hi(3) - 1)
    call tide_fft_forward(plan, a, b)
    err = 0
    do z = ob%lo(3), ob%hi(3) - 1
      do y = ob%lo(2), ob%hi(2) - 1
        do x = ob%lo(1), ob%hi(1) - 1
          err = max(err, abs(b(x, y, z) - dft(g, n, x, y, z)))
        end do
      end do
    end do
    scale = maxval(abs(g)) * product(n)
    call check(err / scale < 1d-13, 'fft c2c double forward against a direct DFT')
    call tide_fft_backward(plan, b, back)
    call check(maxval(abs(back - a)) < 1d-13, 'fft c2c double round trip')
    call tide_fft_plan_destroy(plan)
    ! r2c float: the plan's boxes (C order: arrays indexed (z, y, x))
    o = tide_fft_options()
    o%type = TIDE_R2C
    o%precision = TIDE_FLOAT
    call tide_fft_plan_create(ctx, n, plan, o)
    ib = plan%inbox
    ob = plan%outbox
    call check(all(ib%order == [0, 1, 2]), 'fft r2c: the plan''s boxes in C order')
    allocate(r(ib%lo(3):ib%hi(3) - 1, ib%lo(2):ib%hi(2) - 1, ib%lo(1):ib%hi(1) - 1))
    allocate(rback, mold=r)
    allocate(c(ob%lo(3):ob%hi(3) - 1, ob%lo(2):ob%hi(2) - 1, ob%lo(1):ob%hi(1) - 1))
    do x = ib%lo(1), ib%hi(1) - 1
      do y = ib%lo(2), ib%hi(2) - 1
        do z = ib%lo(3), ib%hi(3) - 1
          r(z, y, x) = real(real(g(x, y, z)), c_float)
        end do
      end do
    end do
    g = cmplx(real(g, c_double), 0, c_double_complex)
    call tide_fft_forward(plan, r, c)
    err = 0
    do x = ob%lo(1), ob%hi(1) - 1
      do y = ob%lo(2), ob%hi(2) - 1
        do z = ob%lo(3), ob%hi(3) - 1
          err = max(err, abs(c(z, y, x) - dft(g, n, x, y, z)))
        end do
      end do
    end do
    call check(err / scale < 1d-5, 'fft r2c float forward against a direct DFT')
    call tide_fft_backward(plan, c, rback)
    call check(maxval(abs(rback / product(n) - r)) < 1e-5, 'fft c2r float round trip')
    call tide_fft_plan_destroy(plan)
  end subroutine

  !> The module's calls beyond the operations (context queries, measurements, memory, plans'
  !> cost, describe and stream) against the C library's answers for the same context and plans.
  subroutine test_c_api()
    integer, parameter :: n(3) = [6, 5, 4]
    type(tide_fft_plan) :: fp
    type(tide_poisson_plan) :: pp
    type(tide_stencil_plan) :: sp
    type(tide_gemm_plan) :: gp
    type(tide_fft_cost) :: cost
    type(tide_device_info) :: dev
    type(tide_rates) :: rates
    type(tide_fft_info) :: info
    type(tide_box) :: box
    real(c_double) :: want(9), gbps, lo, hi
    character(kind=c_char) :: buf(1024)
    character(len=:), allocatable :: text
    integer(c_int) :: device, cuda_aware, nccl
    integer :: threads, st, dir, backend, e(3), i
    integer(c_size_t) :: bytes
    type(c_ptr) :: hp, dp
    complex(c_double_complex), pointer :: a(:, :, :)
    complex(c_double_complex), allocatable, target :: ref(:, :, :), out1(:, :, :), &
      out2(:, :, :), copied(:, :, :)

    call tide_context_threads(ctx, threads)
    call check(threads == tide_test_threads(ctx%p), 'tide_context_threads against C')
    call tide_context_set_progress(ctx, 0.0_c_double, st)
    call check(st == TIDE_SUCCESS, 'tide_context_set_progress(0)')
    call tide_context_set_progress(ctx, -1.0_c_double, st)
    call check(st == TIDE_ERR_ARGUMENT, 'tide_context_set_progress(-1) refused')
    call tide_test_gpu_status(ctx%p, buf, size(buf, kind=c_size_t))
    call check(tide_context_gpu_status(ctx) == tide_c_string(buf) .and. &
      len(tide_c_string(buf)) > 0, 'tide_context_gpu_status against C')
    call tide_context_device(ctx, dev)
    st = tide_test_device(ctx%p, device, cuda_aware, nccl, buf, size(buf, kind=c_size_t))
    call check(st == TIDE_SUCCESS .and. dev%device == device .and. &
      dev%cuda_aware_mpi == cuda_aware .and. dev%nccl_version == nccl .and. &
      tide_c_string(dev%name) == tide_c_string(buf), 'tide_context_device against C')
    call tide_context_backend(ctx, backend)
    call check((backend == TIDE_BACKEND_CPU) .eqv. (dev%device == -1), &
      'tide_context_device: device -1 exactly on a CPU context')

    ! plans: cost, describe and set_stream against C for the same plan
    call tide_box_slab(n, 0, nranks, rank, box)
    call tide_fft_plan_create(ctx, n, fp, inbox=box, outbox=box)
    do dir = -1, 1, 2
      call tide_fft_plan_cost(fp, dir, cost)
      st = tide_test_fft_cost(fp%p, int(dir, c_int), want)
      call check(st == TIDE_SUCCESS .and. all(abs([cost%flops, cost%fft_bytes, cost%move_bytes, &
        cost%exchange_bytes, cost%h2d_bytes, cost%d2h_bytes, real(cost%exchanges, c_double), &
        real(cost%fft_passes, c_double), cost%cpu_seconds] - want) <= 0) .and. cost%flops > 0, &
        'tide_fft_plan_cost against C')
    end do
    call check_describe(0, fp%p, tide_fft_plan_describe(fp), 'fft')
    call tide_fft_plan_set_stream(fp, c_null_ptr, stat=st)
    call check(st == TIDE_SUCCESS, 'tide_fft_plan_set_stream')

    call tide_poisson_plan_create(ctx, n, pp, box=box)
    call tide_poisson_plan_cost(pp, cost)
    st = tide_test_poisson_cost(pp%p, want)
    call check(st == TIDE_SUCCESS .and. all(abs([cost%flops, cost%fft_bytes, cost%move_bytes, &
      cost%exchange_bytes, cost%h2d_bytes, cost%d2h_bytes, real(cost%exchanges, c_double), &
      real(cost%fft_passes, c_double), cost%cpu_seconds] - want) <= 0), &
      'tide_poisson_plan_cost against C')
    call check_describe(1, pp%p, tide_poisson_plan_describe(pp), 'poisson')
    call tide_poisson_plan_set_stream(pp, c_null_ptr, stat=st)
    call check(st == TIDE_SUCCESS, 'tide_poisson_plan_set_stream')
    call tide_poisson_plan_destroy(pp)

    call tide_stencil_plan_create(ctx, n, sp, box=box)
    call check_describe(2, sp%p, tide_stencil_plan_describe(sp), 'stencil')
    call tide_stencil_plan_set_stream(sp, c_null_ptr, stat=st)
    call check(st == TIDE_SUCCESS, 'tide_stencil_plan_set_stream')
    call tide_stencil_plan_destroy(sp)

    call tide_gemm_plan_create(ctx, 5_c_long_long, 4_c_long_long, 3_c_long_long, gp)
    call check_describe(3, gp%p, tide_gemm_plan_describe(gp), 'gemm')
    call tide_gemm_plan_set_stream(gp, c_null_ptr, stat=st)
    call check(st == TIDE_SUCCESS, 'tide_gemm_plan_set_stream')
    call tide_gemm_plan_destroy(gp)

    ! host memory from tide_host_alloc as a Fortran array: zeroed, aligned, transformed as an
    ! allocatable array of the same values is; tide_copy back into an allocatable one
    call tide_fft_plan_info(fp, info)
    e = box%hi - box%lo
    bytes = int(info%in_count, c_size_t) * 16
    call tide_host_alloc(ctx, bytes, hp)
    call c_f_pointer(hp, a, e)
    call check(maxval(abs(a)) <= 0 .and. mod(transfer(hp, 0_c_intptr_t), 64_c_intptr_t) == 0, &
      'tide_host_alloc: zeroed, 64-byte aligned')
    allocate(ref(e(1), e(2), e(3)), out1(e(1), e(2), e(3)), out2(e(1), e(2), e(3)), &
      copied(e(1), e(2), e(3)))
    call random_number(lo)
    ref = cmplx(reshape([(sin(0.37d0 * i + lo), i = 1, product(e))], e), 0.5d0, &
      c_double_complex)
    a = ref
    call tide_fft_forward(fp, a, out1)
    call tide_fft_forward(fp, ref, out2)
    call check(maxval(abs(out1 - out2)) <= 0, 'fft on tide_host_alloc memory')
    call tide_copy(ctx, c_loc(copied), hp, bytes)
    call check(maxval(abs(copied - ref)) <= 0, 'tide_copy host to host')
    call tide_host_free(ctx, hp)
    call check(.not. c_associated(hp), 'tide_host_free clears the pointer')
    call tide_fft_plan_destroy(fp)

    ! device memory: a CPU context has none
    call tide_device_alloc(ctx, 64_c_size_t, dp, stat=st)
    if (backend == TIDE_BACKEND_CPU) then
      call check(st == TIDE_ERR_UNSUPPORTED, 'tide_device_alloc on a CPU context')
    else
      call check(st == TIDE_SUCCESS, 'tide_device_alloc on a GPU context')
      call tide_device_free(ctx, dp)
    end if

    ! measurements: a local host copy rate; the exchange rate the same on every rank
    call tide_measure_rates(ctx, 1048576_c_size_t, rates)
    call check(rates%host_copy > 0 .and. (backend /= TIDE_BACKEND_CPU .or. rates%h2d <= 0), &
      'tide_measure_rates')
    call tide_measure_rates(ctx, 1048576_c_size_t, rates, together=.true.)
    call check(rates%host_copy > 0, 'tide_measure_rates together')
    call tide_measure_exchange(ctx, TIDE_EXCHANGE_AUTO, 65536_c_size_t, gbps)
    call MPI_Allreduce(gbps, lo, 1, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD)
    call MPI_Allreduce(gbps, hi, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
    call check(hi - lo <= 0 .and. ((nranks == 1) .eqv. (gbps <= 0)), 'tide_measure_exchange')
    text = tide_last_error(ctx)
    call check(len(text) >= 0, 'last error readable')
  end subroutine

  subroutine check_describe(kind, plan, got, what)
    integer, intent(in) :: kind
    type(c_ptr), intent(in) :: plan
    character(len=*), intent(in) :: got, what
    character(kind=c_char) :: buf(1024)
    integer(c_int) :: st
    st = tide_test_describe(int(kind, c_int), plan, buf, size(buf, kind=c_size_t))
    call check(st == TIDE_SUCCESS .and. len(got) > 0 .and. got == tide_c_string(buf), &
      what // ' describe against C: ' // got)
  end subroutine

  subroutine test_poisson()
    integer, parameter :: n(3) = [6, 5, 7]
    real(c_double), parameter :: h(3) = [0.5d0, 1d0, 0.25d0], alpha = 0.75d0
    type(tide_poisson_options) :: o
    type(tide_poisson_plan) :: plan
    type(tide_box) :: box
    real(c_double), allocatable :: f(:, :, :), u(:, :, :), exact(:, :, :)
    real(c_double) :: lam
    integer :: x, y, z
    ! periodic x and y, Dirichlet z: cos and sin modes along x, y and the DST-II mode along z
    o%bc(:, 3) = TIDE_BC_DIRICHLET
    o%h = h
    o%alpha = alpha
    call tide_box_slab(n, 1, nranks, rank, box)
    call tide_poisson_plan_create(ctx, n, plan, o, box)
    allocate(f(box%lo(1):box%hi(1) - 1, box%lo(2):box%hi(2) - 1, box%lo(3):box%hi(3) - 1))
    allocate(u, exact, mold=f)
    lam = 2 * (cos(2 * pi / n(1)) - 1) / h(1)**2 + 2 * (cos(4 * pi / n(2)) - 1) / h(2)**2 + &
          2 * (cos(pi / n(3)) - 1) / h(3)**2 - alpha
    do z = box%lo(3), box%hi(3) - 1
      do y = box%lo(2), box%hi(2) - 1
        do x = box%lo(1), box%hi(1) - 1
          exact(x, y, z) = cos(2 * pi * x / n(1)) * sin(4 * pi * y / n(2)) * &
                           sin(pi * (z + 0.5d0) / n(3))
        end do
      end do
    end do
    f = lam * exact
    call tide_poisson_solve(plan, f, u)
    call check(maxval(abs(u - exact), mask=.true.) < 1d-12 .or. size(u) == 0, &
               'poisson Dirichlet z, Helmholtz: the discrete mode')
    call tide_poisson_solve(plan, f, f)
    call check(all(abs(f - u) < 1d-13), 'poisson in place')
    call tide_poisson_plan_destroy(plan)
  end subroutine

  subroutine test_stencil()
    integer, parameter :: n(3) = [7, 5, 6], steps = 3
    type(tide_stencil_options) :: o
    type(tide_stencil_plan) :: plan
    type(tide_box) :: box
    real(c_double), target :: w(7)
    real(c_double) :: g(0:n(1) - 1, 0:n(2) - 1, 0:n(3) - 1), new(0:n(1) - 1, 0:n(2) - 1, 0:n(3) - 1)
    real(c_double), allocatable :: u(:, :, :)
    integer :: grid(3), x, y, z, s
    w = [0.4d0, 0.11d0, 0.09d0, 0.1d0, 0.12d0, 0.08d0, 0.1d0]
    o%weights = c_loc(w)
    o%bc = TIDE_BC_PERIODIC
    call tide_proc_grid(nranks, n, [1, 1, 1], grid)
    call tide_box_in_grid(n, grid, rank, box)
    call tide_stencil_plan_create(ctx, n, plan, o, box)
    do z = 0, n(3) - 1
      do y = 0, n(2) - 1
        do x = 0, n(1) - 1
          g(x, y, z) = val(x, y, z, 2)
        end do
      end do
    end do
    u = g(box%lo(1):box%hi(1) - 1, box%lo(2):box%hi(2) - 1, box%lo(3):box%hi(3) - 1)
    call tide_stencil_run(plan, u, steps)
    do s = 1, steps
      do z = 0, n(3) - 1
        do y = 0, n(2) - 1
          do x = 0, n(1) - 1
            new(x, y, z) = w(1) * g(x, y, z) + w(2) * g(modulo(x - 1, n(1)), y, z) + &
              w(3) * g(modulo(x + 1, n(1)), y, z) + w(4) * g(x, modulo(y - 1, n(2)), z) + &
              w(5) * g(x, modulo(y + 1, n(2)), z) + w(6) * g(x, y, modulo(z - 1, n(3))) + &
              w(7) * g(x, y, modulo(z + 1, n(3)))
          end do
        end do
      end do
      g = new
    end do
    call check(all(abs(u - g(box%lo(1):box%hi(1) - 1, box%lo(2):box%hi(2) - 1, &
      box%lo(3):box%hi(3) - 1)) < 1d-14), 'stencil 7pt periodic against a naive loop')
    call tide_stencil_plan_destroy(plan)
  end subroutine

  subroutine test_band()
    integer, parameter :: n = 29, kl = 2, ku = 3, steps = 4
    type(tide_band_options) :: o
    type(tide_band_plan) :: plan
    type(tide_band_info) :: info
    real(c_double) :: a(-kl:ku, 0:n - 1), xg(0:n - 1), y(0:n - 1), t(0:n - 1)
    real(c_double), allocatable, target :: diag(:, :), x(:)
    integer :: lo, hi, i, d, s
    lo = n * rank / nranks
    hi = n * (rank + 1) / nranks
    do i = 0, n - 1
      xg(i) = sin(real(i + 1, c_double))
      do d = -kl, ku
        a(d, i) = 0.3d0 * cos(real(7 * i + d, c_double))
      end do
    end do
    allocate (diag(hi - lo, kl + ku + 1))
    do d = -kl, ku
      diag(:, d + kl + 1) = a(d, lo:hi - 1)
    end do
    x = xg(lo:hi - 1)
    call tide_band_options_init(o)
    o%kl = kl
    o%ku = ku
    o%diagonals = c_loc(diag)
    call tide_band_plan_create(ctx, n, lo, hi, plan, o)
    call tide_band_run(plan, x, steps)
    y = xg
    do s = 1, steps
      t = 0
      do i = 0, n - 1
        do d = max(-kl, -i), min(ku, n - 1 - i)
          t(i) = t(i) + a(d, i) * y(i + d)
        end do
      end do
      y = t
    end do
    call check(all(abs(x - y(lo:hi - 1)) <= 1d-13 * maxval(abs(y))), &
      'band kl 2 ku 3 against a naive loop')
    call tide_band_plan_info(plan, info)
    call check(info%lo == lo .and. info%hi == hi .and. info%kl == kl .and. info%ku == ku, &
      'tide_band_plan_info')
    call check(len(tide_band_plan_describe(plan)) > 0, 'tide_band_plan_describe')
    call tide_band_plan_set_stream(plan, c_null_ptr)
    call tide_band_plan_destroy(plan)
  end subroutine

  subroutine test_gemm()
    integer(c_long_long), parameter :: m = 7, n = 5, k = 9
    type(tide_gemm_options) :: o
    type(tide_gemm_plan) :: plan
    type(tide_gemm_info) :: info
    real(c_double) :: a(m, k), b(k, n), c(m, n)
    complex(c_double_complex) :: za(k, m), zb(k, n), zc(m, n), want(m, n)
    real(c_double), allocatable :: la(:, :), lb(:, :), lc(:, :)
    complex(c_double_complex), allocatable :: lza(:, :), lzb(:, :), lzc(:, :)
    integer :: i, j, r0, r1, c0, c1, ka0, ka1, kb0, kb1
    do j = 1, int(k)
      do i = 1, int(m)
        a(i, j) = val(i, j, 0, 3)
        za(j, i) = cmplx(val(i, j, 1, 4), val(i, j, 2, 5), c_double_complex)
      end do
    end do
    do j = 1, int(n)
      do i = 1, int(k)
        b(i, j) = val(i, j, 3, 6)
        zb(i, j) = cmplx(val(i, j, 4, 7), val(i, j, 5, 8), c_double_complex)
      end do
      do i = 1, int(m)
        c(i, j) = val(i, j, 6, 9)
        zc(i, j) = cmplx(val(i, j, 7, 1), val(i, j, 8, 2), c_double_complex)
      end do
    end do
    ! real, column major, beta 0.5
    call tide_gemm_plan_create(ctx, m, n, k, plan, o)
    call tide_gemm_plan_info(plan, info)
    call gemm_blocks(info%grid, m, n, k, r0, r1, c0, c1, ka0, ka1, kb0, kb1)
    la = a(r0 + 1:r1, ka0 + 1:ka1)
    lb = b(kb0 + 1:kb1, c0 + 1:c1)
    lc = c(r0 + 1:r1, c0 + 1:c1)
    call tide_gemm_execute(plan, 2d0, la, lb, 0.5d0, lc)
    c = 2 * matmul(a, b) + 0.5d0 * c
    call check(all(abs(lc - c(r0 + 1:r1, c0 + 1:c1)) < 1d-12), 'gemm real against matmul')
    call tide_gemm_plan_destroy(plan)
    ! complex, op(A) the conjugate transpose
    o%domain = TIDE_COMPLEX
    o%transa = TIDE_CONJTRANS
    call tide_gemm_plan_create(ctx, m, n, k, plan, o)
    call tide_gemm_plan_info(plan, info)
    call gemm_blocks(info%grid, m, n, k, r0, r1, c0, c1, ka0, ka1, kb0, kb1)
    lza = za(ka0 + 1:ka1, r0 + 1:r1)
    lzb = zb(kb0 + 1:kb1, c0 + 1:c1)
    lzc = zc(r0 + 1:r1, c0 + 1:c1)
    call tide_gemm_execute(plan, (1d0, -1d0), lza, lzb, (0d0, 2d0), lzc)
    want = (1d0, -1d0) * matmul(conjg(transpose(za)), zb) + (0d0, 2d0) * zc
    call check(all(abs(lzc - want(r0 + 1:r1, c0 + 1:c1)) < 1d-12), &
               'gemm complex conjugate-transposed A against matmul')
    call tide_gemm_plan_destroy(plan)
    ! the user's blocks: a grid of nranks x 1, C's rows cut unevenly (the first rank one row)
    call gemm_user_blocks(a, b, m, n, k)
    ! one rank: a block inside a larger array, as lda allows
    if (nranks == 1) then
      o = tide_gemm_options()
      o%lda = m + 3
      call tide_gemm_plan_create(ctx, m - 1, n, k, plan, o)
      deallocate(la)
      allocate(la(m + 3, k))
      la = 0
      la(1:m - 1, :) = a(1:m - 1, :)
      lc = c(1:m - 1, :)
      call tide_gemm_execute(plan, 1d0, la(1:m - 1, :), b, 0d0, lc)
      call check(all(abs(lc - matmul(a(1:m - 1, :), b)) < 1d-12), 'gemm lda: a section')
      call tide_gemm_plan_destroy(plan)
    end if
  end subroutine

  subroutine gemm_user_blocks(a, b, m, n, k)
    integer(c_long_long), intent(in) :: m, n, k
    real(c_double), intent(in) :: a(m, k), b(k, n)
    type(tide_gemm_options) :: o
    type(tide_gemm_plan) :: plan
    integer(c_long_long), target :: rows(nranks + 1), cols(2), acols(2), brows(nranks + 1)
    real(c_double), allocatable :: la(:, :), lb(:, :), lc(:, :)
    integer :: i, r0, r1
    rows(1) = 0
    do i = 1, nranks - 1
      rows(i + 1) = 1 + (i - 1) * (m - 1) / max(nranks - 1, 1)
    end do
    rows(nranks + 1) = m
    brows = [(i * k / nranks, i = 0, nranks)]
    cols = [0_c_long_long, n]
    acols = [0_c_long_long, k]
    o%grid = [nranks, 1]
    o%blocks = [c_loc(rows), c_loc(cols), c_loc(acols), c_loc(brows)]
    call tide_gemm_plan_create(ctx, m, n, k, plan, o)
    r0 = int(rows(rank + 1))
    r1 = int(rows(rank + 2))
    la = a(r0 + 1:r1, :)                       ! this rank's blocks, contiguous (lda 0)
    lb = b(brows(rank + 1) + 1:brows(rank + 2), :)
    allocate(lc(r1 - r0, n))
    lc = 0
    call tide_gemm_execute(plan, 1d0, la, lb, 0d0, lc)
    call check(all(abs(lc - matmul(a(r0 + 1:r1, :), b)) < 1d-12), &
      'gemm with the user''s blocks against matmul')
    call tide_gemm_plan_destroy(plan)
  end subroutine

  ! this rank's blocks of a grid(1) x grid(2) process grid (tide.h): rows [r0, r1) and
  ! columns [c0, c1) of C, columns [ka0, ka1) of op(A), rows [kb0, kb1) of op(B)
  subroutine gemm_blocks(g, m, n, k, r0, r1, c0, c1, ka0, ka1, kb0, kb1)
    integer(c_int), intent(in) :: g(2)
    integer(c_long_long), intent(in) :: m, n, k
    integer, intent(out) :: r0, r1, c0, c1, ka0, ka1, kb0, kb1
    integer :: row, col
    row = rank / g(2)
    col = mod(rank, g(2))
    r0 = int(row * m / g(1)); r1 = int((row + 1) * m / g(1))
    c0 = int(col * n / g(2)); c1 = int((col + 1) * n / g(2))
    ka0 = int(col * k / g(2)); ka1 = int((col + 1) * k / g(2))
    kb0 = int(row * k / g(1)); kb1 = int((row + 1) * k / g(1))
  end subroutine

  ! st must be want on this rank, and the same on every rank
  subroutine agreed(st, want, what)
    integer, intent(in) :: st, want
    character(len=*), intent(in) :: what
    integer :: lo, hi
    call MPI_Allreduce(st, lo, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
    call MPI_Allreduce(st, hi, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    call check(st == want .and. lo == hi, what // ': ' // tide_strerror(st) // ': ' // &
               tide_last_error(ctx))
  end subroutine

  subroutine test_errors()
    integer, parameter :: n(3) = [5, 6, 3]
    type(tide_fft_plan) :: plan
    type(tide_box) :: box
    complex(c_double_complex), allocatable, target :: a(:, :, :), big(:, :, :)
    complex(c_float_complex), allocatable :: s(:, :, :)
    character(len=:), allocatable :: msg
    integer :: st
    logical :: last
    last = rank == nranks - 1
    call tide_box_slab(n, 0, nranks, rank, box)
    if (last) box%hi(3) = box%hi(3) - 1
    call tide_fft_plan_create(ctx, n, plan, inbox=box, outbox=box, stat=st)
    call agreed(st, TIDE_ERR_BOX, 'boxes with a hole on the last rank')
    call tide_box_slab(n, 0, nranks, rank, box)
    call tide_fft_plan_create(ctx, n, plan, inbox=box, outbox=box)
    allocate(a(box%lo(1):box%hi(1) - 1, 0:n(2) - 1, 0:n(3) - 1))
    a = 1
    if (last) then
      allocate(big(0:n(1), 0:n(2) - 1, 0:n(3) - 1))
    else
      allocate(big, source=a)
    end if
    call tide_fft_forward(plan, big, big, stat=st)
    call agreed(st, TIDE_ERR_ARGUMENT, &
                'an array of the wrong shape on the last rank')
    deallocate(big)
    if (last) then
      allocate(big(box%lo(1):box%hi(1), 0:n(2) - 1, 0:n(3) - 1))
    else
      allocate(big(box%lo(1):box%hi(1) - 1, 0:2 * n(2) - 1, 0:n(3) - 1))
    end if
    ! a section that is not contiguous (every other y on the first ranks, an x short on the
    ! last rank's larger array) is refused, never copied
    if (last) then
      call tide_fft_forward(plan, big(box%lo(1):box%hi(1) - 1, :, :), a, stat=st)
    else
      call tide_fft_forward(plan, big(:, 0:2 * n(2) - 1:2, :), a, stat=st)
    end if
    call agreed(st, TIDE_ERR_ARGUMENT, 'a non-contiguous section')
    allocate(s(box%lo(1):box%hi(1) - 1, 0:n(2) - 1, 0:n(3) - 1))
    if (last) then
      call tide_fft_forward(plan, s, s, stat=st)
    else
      call tide_fft_forward(plan, a, a, stat=st)
    end if
    call agreed(st, TIDE_ERR_ARGUMENT, 'a complex(c_float) array on a double plan')
    msg = tide_last_error(ctx)
    call check(.not. last .or. index(msg, 'complex(c_float)') > 0, &
               'the last rank''s message names its array: ' // msg)
    call tide_fft_forward(plan, a, a, stat=st)
    call agreed(st, TIDE_SUCCESS, 'the plan after refusals')
    call check(abs(a(box%lo(1), 0, 0) - merge(product(n), 0, box%lo(1) == 0)) < 1d-12, &
               'the transform after refusals')
    call tide_fft_plan_destroy(plan)
  end subroutine

  subroutine test_integer_comm()
    type(tide_context) :: c
    integer :: st, backend
    call tide_context_create(MPI_COMM_WORLD%MPI_VAL, c, stat=st)
    call check(st == TIDE_SUCCESS, 'a context on an integer communicator')
    call tide_context_backend(c, backend)
    call check(backend == TIDE_BACKEND_CPU, 'the context''s backend')
    call tide_context_destroy(c)
  end subroutine
end program
