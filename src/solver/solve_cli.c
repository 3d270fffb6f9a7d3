#include "solver.h"
int solver_cli_main(int argc, char **argv)
{
    return 2;
}
