/*
 * faultprog — workloads that stress the sampler's failure paths (tests/integration/faults_*.sh):
 *
 *   faultprog recurse DEPTH SECONDS [GO] spin at the bottom of DEPTH nested calls of recurse_n
 *                                        (once the file GO exists, when given)
 *   faultprog churn N SECONDS LOG       keep N threads alive, each sleeping 1–20 ms then spinning
 *                                        0.2 ms in churn_worker, named "c<seq>"; each appends
 *                                        "tid name" to LOG before it spins (so LOG lists every
 *                                        thread that could ever be sampled)
 *   faultprog spin NAME SECONDS         spin in bystander_spin with comm NAME (a process that
 *                                        must never show up in someone else's profile)
 *
 * Every mode ends by itself after SECONDS.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void spin_until(double end)
{
    uint64_t x = 88172645463325252ull;

    while (now() < end) {
        for (int i = 0; i < 20000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        sink = x;
    }
}

/* -- recurse ------------------------------------------------------------------------------- */

/* Not a tail call (the addition after it), so each level keeps a real frame. */
__attribute__((noinline)) int recurse_n(int depth, double end)
{
    if (depth <= 1) {
        spin_until(end);
        return (int)(sink & 1);
    }
    return recurse_n(depth - 1, end) + (int)(sink & 1);
}

/* -- churn --------------------------------------------------------------------------------- */

static FILE *churn_log;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static double churn_end;

struct churn_arg {
    unsigned seq;
    double life;
};

__attribute__((noinline)) void churn_worker(unsigned seq, double life)
{
    char name[16];

    snprintf(name, sizeof(name), "c%u", seq);
    prctl(PR_SET_NAME, name);
    pthread_mutex_lock(&log_lock);
    fprintf(churn_log, "%d %s\n", (int)gettid(), name);
    fflush(churn_log);
    pthread_mutex_unlock(&log_lock);
    /* Mostly asleep, so that hundreds of threads turn over quickly on few CPUs; the spin is
     * what gets sampled. */
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(life * 1e9)};

    nanosleep(&ts, NULL);
    spin_until(now() + 0.0002);
}

static pthread_cond_t slot_free = PTHREAD_COND_INITIALIZER;
static int live;

static void *churn_thread(void *p)
{
    struct churn_arg a = *(struct churn_arg *)p;

    free(p);
    churn_worker(a.seq, a.life);
    pthread_mutex_lock(&log_lock);
    live--;
    pthread_cond_signal(&slot_free);
    pthread_mutex_unlock(&log_lock);
    return NULL;
}

/* Keeps n detached threads alive: a new one starts as soon as one ends. */
static int churn(int n, double seconds, const char *log)
{
    pthread_attr_t attr;
    unsigned seq = 0;

    churn_log = fopen(log, "w");
    if (!churn_log)
        return 1;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    churn_end = now() + seconds;
    pthread_mutex_lock(&log_lock);
    while (now() < churn_end) {
        pthread_t t;
        struct churn_arg *a;

        if (live >= n) {
            pthread_cond_wait(&slot_free, &log_lock);
            continue;
        }
        a = malloc(sizeof(*a));
        if (!a)
            break;
        a->seq = ++seq;
        a->life = (1 + (seq * 7919u) % 20) / 1000.0;
        if (pthread_create(&t, &attr, churn_thread, a)) {
            free(a);
            break;
        }
        live++;
    }
    while (live > 0)
        pthread_cond_wait(&slot_free, &log_lock);
    pthread_mutex_unlock(&log_lock);
    printf("threads started: %u\n", seq);
    fclose(churn_log);
    return 0;
}

/* -- bystander ----------------------------------------------------------------------------- */

__attribute__((noinline)) void bystander_spin(double end)
{
    spin_until(end);
    sink++;
}

int main(int argc, char **argv)
{
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "recurse")) {
        /* with GOFILE: started before the sampler attaches, it runs once the test says so */
        while (argc == 5 && access(argv[4], F_OK) != 0)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        return recurse_n(atoi(argv[2]), now() + atof(argv[3])) < 0;
    }
    if (argc == 5 && !strcmp(argv[1], "churn"))
        return churn(atoi(argv[2]), atof(argv[3]), argv[4]);
    if (argc == 4 && !strcmp(argv[1], "spin")) {
        prctl(PR_SET_NAME, argv[2]);
        bystander_spin(now() + atof(argv[3]));
        return 0;
    }
    fprintf(stderr, "usage: faultprog recurse DEPTH SEC [GOFILE] | churn N SEC LOG | spin NAME SEC\n");
    return 2;
}
