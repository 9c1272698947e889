/* Test driver: `render_test ARGS...` runs `pyebpf-sample render ARGS...` (user/output/render.c) so the
 * output writers can be tested before, and independently of, the sampler's main. */
#include "output/render.h"

int main(int argc, char **argv)
{
    return render_main(argc, argv);
}
