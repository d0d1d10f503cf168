/* The ModelNew shim: makes a Python ModelNew look like any kernel to the gate's runner.
 *
 * Built by backends/modelnew.py with "modelnew_config.h", which holds, as byte arrays, the host
 * (backends/_modelnew_host.py), the candidate's kernel.py, the extension's module name (empty
 * for none) and where the interpreter's files are. The candidate's extension is linked into this
 * same library, so the runner loads one file, hash-checked like any kernel.
 *
 * The constructor runs while the runner loads the library (its first seccomp stage), after the
 * extension's own (the shim is linked last: its static initializers and nvcc's registration of
 * its GPU kernels must come first, as when load_inline loads it into a running Python): it starts
 * an isolated interpreter (no signal handlers, no site, no environment of its own) and runs the
 * host's start(). kl_launch hands the arena pointers (host memory, or on CUDA device memory) and
 * the stream to the host's call(). Everything here runs in the untrusted process; nothing it
 * says is believed by the trusted side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modelnew_config.h"

static PyObject* host_call;
static long counts[4]; /* inputs, outputs, axes, params */

static PyObject* view(PyObject* self, PyObject* args) {
    (void)self;
    unsigned long long address;
    Py_ssize_t size;
    int writable;
    if (!PyArg_ParseTuple(args, "Knp", &address, &size, &writable)) return NULL;
    return PyMemoryView_FromMemory((char*)(uintptr_t)address, size, writable ? PyBUF_WRITE : PyBUF_READ);
}

static PyMethodDef shim_methods[] = {{"view", view, METH_VARARGS, "memory as a memoryview"}, {NULL}};
static struct PyModuleDef shim_module = {PyModuleDef_HEAD_INIT, "_kl_shim", NULL, -1, shim_methods};

static PyObject* shim_init(void) {
    PyObject* module = PyModule_Create(&shim_module);
    Dl_info self;
    if (!module || !dladdr((void*)&view, &self)) return NULL;
    if (PyModule_AddStringConstant(module, "KERNEL_SOURCE", KL_KERNEL_SOURCE) ||
        PyModule_AddStringConstant(module, "EXTENSION", KL_EXTENSION) ||
        PyModule_AddStringConstant(module, "LIBRARY", self.dli_fname))
        return NULL;
    return module;
}

static void die(const char* what) {
    fprintf(stderr, "ModelNew shim: %s\n", what);
    if (PyErr_Occurred()) PyErr_Print();
    fflush(stderr);
    _exit(3);
}

static void start_python(void) {
    /* Python's extension modules (numpy's, torch's) expect its symbols to be global. */
    if (!dlopen(KL_LIBPYTHON, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) die(dlerror());
    if (PyImport_AppendInittab("_kl_shim", shim_init) != 0) die("cannot register _kl_shim");
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0; /* the runner's filters forbid new handlers */
    config.site_import = 0;
    config.write_bytecode = 0;
    config.module_search_paths_set = 1;
    PyStatus status = PyConfig_SetBytesString(&config, &config.home, KL_PYTHON_HOME);
    char paths[] = KL_SEARCH_PATH;
    for (char* path = strtok(paths, "\n"); path && !PyStatus_Exception(status); path = strtok(NULL, "\n")) {
        wchar_t* wide = Py_DecodeLocale(path, NULL);
        status = wide ? PyWideStringList_Append(&config.module_search_paths, wide) : PyStatus_NoMemory();
        PyMem_RawFree(wide);
    }
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) die(status.err_msg ? status.err_msg : "cannot start Python");
}

__attribute__((constructor)) static void start(void) {
    start_python();
    PyObject* code = Py_CompileString(KL_HOST_SOURCE, "klineage_modelnew_host.py", Py_file_input);
    PyObject* host = code ? PyImport_ExecCodeModule("klineage_modelnew_host", code) : NULL;
    PyObject* started = host ? PyObject_CallMethod(host, "start", NULL) : NULL;
    if (!started || !PyArg_ParseTuple(started, "llll", &counts[0], &counts[1], &counts[2], &counts[3]))
        die("the ModelNew could not be loaded");
    host_call = PyObject_GetAttrString(host, "call");
    if (!host_call) die("the host has no call()");
    Py_DECREF(started);
    Py_DECREF(code);
}

static PyObject* pointers(const void* const* values, long count) {
    PyObject* list = PyList_New(count);
    for (long i = 0; list && i < count; i++)
        PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong((uintptr_t)values[i]));
    return list;
}

int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
              const double* params, void* stream) {
    (void)params; /* the ModelNew was built with them (they are fixed per workload) */
    PyObject* axis_list = PyList_New(counts[2]);
    for (long i = 0; axis_list && i < counts[2]; i++)
        PyList_SET_ITEM(axis_list, i, PyLong_FromLongLong(axes[i]));
    /* the stream: NULL on the CPU; on CUDA the one the runner times, where all work must go */
    PyObject* result = PyObject_CallFunction(host_call, "NNNK", pointers(inputs, counts[0]),
                                             pointers((const void* const*)outputs, counts[1]), axis_list,
                                             (unsigned long long)(uintptr_t)stream);
    long rc = result ? PyLong_AsLong(result) : 2;
    if (!result || PyErr_Occurred()) {
        PyErr_Print();
        fflush(stderr);
        rc = 2;
    }
    Py_XDECREF(result);
    return (int)rc;
}
