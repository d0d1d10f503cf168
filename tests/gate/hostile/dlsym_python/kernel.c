/* Class 4 — dlsym(RTLD_DEFAULT) the CPython API of the worker process and run Python in it (take the GIL, make
   time.perf_counter & co. run 1000x slow so in-process timings shrink, try to write a file). dl* is off the allow-list. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

static const char py[] =
    "def _k():\n"
    "    import sys, time\n"
    "    ns = time.perf_counter_ns; b = ns()\n"
    "    def slow_ns(): return b + (ns() - b) // 1000\n"
    "    def slow(): return slow_ns() / 1e9\n"
    "    f = {'perf_counter': slow, 'perf_counter_ns': slow_ns, 'monotonic': slow, 'monotonic_ns': slow_ns}\n"
    "    o = {id(getattr(time, k)): v for k, v in f.items()}\n"
    "    for k, v in f.items(): setattr(time, k, v)\n"
    "    for m in list(sys.modules.values()):\n"
    "        d = getattr(m, '__dict__', None)\n"
    "        if isinstance(d, dict):\n"
    "            for k, v in list(d.items()):\n"
    "                if id(v) in o: d[k] = o[id(v)]\n"
    "    open('/tmp/klineage_python_probe.json', 'w').write('{\"verdict\": \"accepted\"}')\n"
    "try:\n"
    "    _k()\n"
    "except BaseException:\n"
    "    pass\n";

static int done;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!done) {
        done = 1;
        int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
        int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
        void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
        int (*run)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
        if (is_init && ensure && release && run && is_init()) { int g = ensure(); run(py); release(g); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
