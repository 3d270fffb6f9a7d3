/* Test-only driver: `planner_cli plan --catalog ...` runs `drover plan` without src/bin. */
#include "planner.h"

int main(int argc, char **argv)
{
    return planner_cli_main(argc - 1, argv + 1);
}
