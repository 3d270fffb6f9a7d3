/* Test-only driver: `drover_solve_driver ARGS` runs `drover solve ARGS`. */
#include "solver.h"

int main(int argc, char **argv)
{
    argv[0] = "solve";
    return solver_cli_main(argc, argv);
}
