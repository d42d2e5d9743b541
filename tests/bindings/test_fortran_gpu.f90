! test_fortran_gpu: the Fortran module's device path (suite gpu): plans with location =
! TIDE_LOCATION_DEVICE called through the type(c_ptr) forms on memory from tide_device_alloc,
! filled and read with tide_copy, each result against the same plan made for host arrays
! (c2c FFT forward and backward, a Poisson solve, stencil steps) and, on one rank, GEMM against
! matmul. Exit 77 (SKIP) where the context has no GPU, with tide_context_gpu_status.
program test_fortran_gpu
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use tide
  implicit none
  integer, parameter :: n(3) = [9, 6, 5]
  integer :: rank, nranks, failures, total, backend, anycpu
  type(tide_context) :: ctx
  type(tide_box) :: box

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  call tide_context_create(MPI_COMM_WORLD, ctx)
  call tide_context_backend(ctx, backend)
  call MPI_Allreduce(merge(1, 0, backend /= TIDE_BACKEND_CUDA), anycpu, 1, MPI_INTEGER, &
                     MPI_MAX, MPI_COMM_WORLD)
  if (anycpu > 0) then
    if (rank == 0) print '(2a)', 'SKIP: no GPU for the context: ', tide_context_gpu_status(ctx)
    call tide_context_destroy(ctx)
    call MPI_Finalize()
    stop 77
  end if
  call tide_box_slab(n, 0, nranks, rank, box)
  call test_fft()
  call test_poisson_stencil()
  if (nranks == 1) call test_gemm()
  call tide_context_destroy(ctx)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, a, i0, a)', 'test_fortran_gpu on ', nranks, ' ranks: ', &
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

  subroutine fill(a, seed)
    real(c_double), intent(out) :: a(:, :, :)
    integer, intent(in) :: seed
    integer :: x, y, z
    do z = 1, size(a, 3)
      do y = 1, size(a, 2)
        do x = 1, size(a, 1)
          a(x, y, z) = sin(0.3d0 * (x + box%lo(1)) + 0.7d0 * (y + box%lo(2)) + &
                           1.1d0 * (z + box%lo(3)) + seed)
        end do
      end do
    end do
  end subroutine

  subroutine test_fft()
    type(tide_fft_options) :: o
    type(tide_fft_plan) :: host, dev
    complex(c_double_complex), allocatable, target :: a(:, :, :), b(:, :, :), got(:, :, :), &
      back(:, :, :)
    real(c_double), allocatable :: re(:, :, :), im(:, :, :)
    type(c_ptr) :: da, db
    integer(c_size_t) :: bytes
    real(c_double) :: scale
    allocate(re(box%hi(1) - box%lo(1), box%hi(2) - box%lo(2), box%hi(3) - box%lo(3)))
    allocate(im, mold=re)
    call fill(re, 1)
    call fill(im, 2)
    a = cmplx(re, im, c_double_complex)
    allocate(b, got, back, mold=a)
    call tide_fft_plan_create(ctx, n, host, o, box, box)
    call tide_fft_forward(host, a, b)
    o%location = TIDE_LOCATION_DEVICE
    call tide_fft_plan_create(ctx, n, dev, o, box, box)
    call tide_fft_plan_set_stream(dev, c_null_ptr)
    bytes = max(int(size(a), c_size_t) * 16, 16_c_size_t)
    call tide_device_alloc(ctx, bytes, da)
    call tide_device_alloc(ctx, bytes, db)
    call tide_copy(ctx, da, c_loc(a), bytes)
    call tide_fft_forward(dev, da, db)
    call tide_copy(ctx, c_loc(got), db, bytes)
    scale = max(maxval(abs(b)), 1d0)
    call check(maxval(abs(got - b)) / scale < 1d-12, 'device fft forward against the host plan')
    call tide_fft_backward(dev, db, da)
    call tide_copy(ctx, c_loc(back), da, bytes)
    call check(maxval(abs(back / product(n) - a)) < 1d-12, 'device fft round trip')
    call tide_device_free(ctx, da)
    call tide_device_free(ctx, db)
    call tide_fft_plan_destroy(dev)
    call tide_fft_plan_destroy(host)
  end subroutine

  subroutine test_poisson_stencil()
    type(tide_poisson_options) :: po
    type(tide_stencil_options) :: so
    type(tide_poisson_plan) :: phost, pdev
    type(tide_stencil_plan) :: shost, sdev
    real(c_double), allocatable, target :: f(:, :, :), u(:, :, :), got(:, :, :)
    type(c_ptr) :: df, du
    integer(c_size_t) :: bytes
    allocate(f(box%hi(1) - box%lo(1), box%hi(2) - box%lo(2), box%hi(3) - box%lo(3)))
    allocate(u, got, mold=f)
    call fill(f, 3)
    bytes = max(int(size(f), c_size_t) * 8, 8_c_size_t)
    call tide_device_alloc(ctx, bytes, df)
    call tide_device_alloc(ctx, bytes, du)
    po%bc(:, 3) = TIDE_BC_DIRICHLET
    call tide_poisson_plan_create(ctx, n, phost, po, box)
    call tide_poisson_solve(phost, f, u)
    po%location = TIDE_LOCATION_DEVICE
    call tide_poisson_plan_create(ctx, n, pdev, po, box)
    call tide_copy(ctx, df, c_loc(f), bytes)
    call tide_poisson_solve(pdev, df, du)
    call tide_copy(ctx, c_loc(got), du, bytes)
    call check(maxval(abs(got - u)) < 1d-11 * max(maxval(abs(u)), 1d0), &
      'device Poisson against the host plan')
    call tide_poisson_plan_destroy(pdev)
    call tide_poisson_plan_destroy(phost)
    so%bc = TIDE_BC_PERIODIC
    call tide_stencil_plan_create(ctx, n, shost, so, box)
    so%location = TIDE_LOCATION_DEVICE
    call tide_stencil_plan_create(ctx, n, sdev, so, box)
    u = f
    call tide_copy(ctx, du, c_loc(u), bytes)
    call tide_stencil_run(shost, u, 5)
    call tide_stencil_run(sdev, du, 5)
    call tide_copy(ctx, c_loc(got), du, bytes)
    call check(maxval(abs(got - u)) < 1d-13, 'device stencil against the host plan')
    call tide_stencil_plan_destroy(sdev)
    call tide_stencil_plan_destroy(shost)
    call tide_device_free(ctx, df)
    call tide_device_free(ctx, du)
  end subroutine

  subroutine test_gemm()
    integer, parameter :: m = 7, k = 5, nn = 6
    type(tide_gemm_options) :: o
    type(tide_gemm_plan) :: plan
    real(c_double), target :: a(m, k), b(k, nn), c(m, nn)
    type(c_ptr) :: da, db, dc
    call random_number(a)
    call random_number(b)
    o%location = TIDE_LOCATION_DEVICE
    call tide_gemm_plan_create(ctx, int(m, c_long_long), int(nn, c_long_long), &
      int(k, c_long_long), plan, o)
    call tide_device_alloc(ctx, c_sizeof(a), da)
    call tide_device_alloc(ctx, c_sizeof(b), db)
    call tide_device_alloc(ctx, c_sizeof(c), dc)
    call tide_copy(ctx, da, c_loc(a), c_sizeof(a))
    call tide_copy(ctx, db, c_loc(b), c_sizeof(b))
    call tide_gemm_execute(plan, 2d0, da, db, 0d0, dc)
    call tide_copy(ctx, c_loc(c), dc, c_sizeof(c))
    call check(maxval(abs(c - 2 * matmul(a, b))) < 1d-13, 'device GEMM against matmul')
    call tide_device_free(ctx, da)
    call tide_device_free(ctx, db)
    call tide_device_free(ctx, dc)
    call tide_gemm_plan_destroy(plan)
  end subroutine
end program
