! poisson_slabs: a periodic Poisson solve from Fortran on x-slabs, checked against a
! manufactured solution. Each rank holds u(x, y, z) for its slab, indexed by global grid
! indices from 0, x fastest (the module's boxes are in Fortran order).
!
!   mpirun -np 4 poisson_slabs [N]
!
! u = sin(2 pi x / L) cos(4 pi y / L) sin(2 pi z / L) + 1 on the periodic box [0, L)^3 has
! lap(u) = -24 pi^2 / L^2 (u - 1); with spectral eigenvalues the solve recovers u - mean(u) to
! rounding. Exit status 1 when the error exceeds 1e-10.
program poisson_slabs
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use tide
  implicit none
  real(c_double), parameter :: pi = acos(-1d0), L = 2
  integer :: n(3), rank, nranks, x, y, z
  character(len=16) :: arg
  type(tide_context) :: ctx
  type(tide_poisson_options) :: opts
  type(tide_poisson_plan) :: plan
  type(tide_box) :: slab
  real(c_double), allocatable :: f(:, :, :), u(:, :, :), exact(:, :, :)
  real(c_double) :: h, err, mean(1)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  n = 32
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n(1)
    n = n(1)
  end if
  h = L / n(1)

  call tide_context_create(MPI_COMM_WORLD, ctx)
  call tide_box_slab(n, 0, nranks, rank, slab)          ! x cut over the ranks, x fastest
  opts%h = h
  opts%eigen = TIDE_EIGEN_SPECTRAL
  call tide_poisson_plan_create(ctx, n, plan, opts, slab)

  allocate(f(slab%lo(1):slab%hi(1) - 1, slab%lo(2):slab%hi(2) - 1, slab%lo(3):slab%hi(3) - 1))
  allocate(u, exact, mold=f)
  do z = slab%lo(3), slab%hi(3) - 1
    do y = slab%lo(2), slab%hi(2) - 1
      do x = slab%lo(1), slab%hi(1) - 1
        exact(x, y, z) = sin(2 * pi * x * h / L) * cos(4 * pi * y * h / L) * sin(2 * pi * z * h / L)
      end do
    end do
  end do
  f = -24 * pi**2 / L**2 * exact
  f = f + 3                                  ! a mean the singular solve removes and reports
  call tide_poisson_solve(plan, f, u)
  call tide_poisson_mean(plan, mean)

  err = 0
  if (size(u) > 0) err = maxval(abs(u - exact))
  call MPI_Allreduce(MPI_IN_PLACE, err, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) then
    print '(a, i0, a, i0, a, i0, a, i0, a)', 'poisson_slabs: ', n(1), 'x', n(2), 'x', n(3), &
      ' on ', nranks, ' x-slabs, spectral'
    print '(a, es10.3, a, f0.6)', 'max error against the manufactured solution: ', err, &
      ', mean of f removed: ', mean(1)
  end if
  call tide_poisson_plan_destroy(plan)
  call tide_context_destroy(ctx)
  call MPI_Finalize()
  if (err > 1d-10 .or. abs(mean(1) - 3) > 1d-12) then
    if (rank == 0) print '(a)', 'poisson_slabs: FAILED'
    error stop 1
  end if
end program
