/* The ModelNew shim: makes a Python ModelNew look like any kernel to the gate's runner.
 *
 * One file, two objects. Compiled as C (per kernel, by backends/modelnew.py with
 * "modelnew_config.h"), it is the shim: it holds, as byte arrays, the host
 * (backends/_modelnew_host.py), the candidate's kernel.py, the extension's module name and
 * functions (empty for none) and where the interpreter's files are. Compiled as C++ (once, with
 * torch's headers only), it is the op recorder the host turns on while the ModelNew loads.
 * Both, and the candidate's extension, are linked into one library, so the runner loads one
 * file, hash-checked like any kernel: the recorder first (its template instances win over the
 * candidate's), the shim last.
 *
 * The constructor runs while the runner loads the library (its first seccomp stage), after the
 * extension's own (as when load_inline loads it into a running Python, its static initializers
 * and nvcc's registration of its GPU kernels come first): it starts an isolated interpreter (no
 * signal handlers, no site, no environment of its own) and runs the host's start(). kl_launch
 * hands the arena pointers (host memory, or on CUDA device memory) and the stream to the host's
 * call(). Everything here runs in the untrusted process; nothing it says is believed by the
 * trusted side.
 */
#define KL_HIDDEN __attribute__((visibility("hidden")))

#ifdef __cplusplus
extern "C" {
#endif
/* The recorder's side, called by the shim (C) and defined by the recorder (C++). */
KL_HIDDEN int klineage_recorder_start(void);
KL_HIDDEN const char* klineage_recorder_report(void);
KL_HIDDEN long klineage_recorder_size(void);
KL_HIDDEN void klineage_recorder_forward(int inside);
KL_HIDDEN void klineage_recorder_enter(void);
KL_HIDDEN void klineage_recorder_leave(void);
#ifdef __cplusplus
}
#endif

#ifndef __cplusplus
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

/* The extension's calls are marked for the recorder in C, in every run, so kernel.py gets the
 * module load_inline would give it, traced or not: the same function objects, with the same
 * type, repr and attributes, and no Python frame of ours around their calls. pybind11 binds each
 * function as a builtin whose C entry (its PyMethodDef's ml_meth, which CPython reads at every
 * call) is one dispatcher, taking its arguments as a vector (pybind11 3) or as a tuple (earlier);
 * mark() points that entry at a marked_* function, which counts the call as in progress around
 * the dispatcher's. */
typedef PyObject* (*vector_entry)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
typedef PyObject* (*tuple_entry)(PyObject*, PyObject*, PyObject*);
static vector_entry vector_dispatcher;
static tuple_entry tuple_dispatcher;

static PyObject* marked_vector_call(PyObject* self, PyObject* const* args, Py_ssize_t count, PyObject* names) {
    klineage_recorder_enter();
    PyObject* result = vector_dispatcher(self, args, count, names);
    klineage_recorder_leave();
    return result;
}

static PyObject* marked_tuple_call(PyObject* self, PyObject* args, PyObject* kwargs) {
    klineage_recorder_enter();
    PyObject* result = tuple_dispatcher(self, args, kwargs);
    klineage_recorder_leave();
    return result;
}

/* Points def's entry at the marked one for its kind; 0 when it is (or already was) marked. */
static int mark_entry(PyMethodDef* def) {
    int kind = def->ml_flags & ~METH_COEXIST;
    void (*entry)(void) = (void (*)(void))def->ml_meth;
    if (entry == (void (*)(void))marked_vector_call || entry == (void (*)(void))marked_tuple_call) return 0;
    if (kind == (METH_FASTCALL | METH_KEYWORDS)) {
        if (!vector_dispatcher) vector_dispatcher = (vector_entry)entry;
        if (entry != (void (*)(void))vector_dispatcher) return -1;
        def->ml_meth = (PyCFunction)(void (*)(void))marked_vector_call;
        return 0;
    }
    if (kind == (METH_VARARGS | METH_KEYWORDS)) {
        if (!tuple_dispatcher) tuple_dispatcher = (tuple_entry)entry;
        if (entry != (void (*)(void))tuple_dispatcher) return -1;
        def->ml_meth = (PyCFunction)(void (*)(void))marked_tuple_call;
        return 0;
    }
    return -1;
}

static int mark_function(PyObject* module, const char* name) {
    PyObject* function = PyObject_GetAttrString(module, name);
    if (!function) return -1;
    int ok = PyCFunction_Check(function) && mark_entry(((PyCFunctionObject*)function)->m_ml) == 0;
    Py_DECREF(function);
    if (!ok) PyErr_Format(PyExc_RuntimeError, "the extension's %s is not a function its bindings made", name);
    return ok ? 0 : -1;
}

static PyObject* mark(PyObject* self, PyObject* module) {
    (void)self;
    char names[] = KL_FUNCTIONS; /* strtok writes into it */
    for (char* name = strtok(names, "\n"); name; name = strtok(NULL, "\n"))
        if (mark_function(module, name) != 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject* start_recording(PyObject* self, PyObject* unused) {
    (void)self;
    (void)unused;
    if (klineage_recorder_start() != 0) return PyErr_Format(PyExc_RuntimeError, "the op recorder did not start");
    Py_RETURN_NONE;
}

static PyObject* forward(PyObject* self, PyObject* inside) {
    (void)self;
    klineage_recorder_forward(PyObject_IsTrue(inside));
    Py_RETURN_NONE;
}

static PyObject* recorded(PyObject* self, PyObject* unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(klineage_recorder_report());
}

static PyObject* recorded_size(PyObject* self, PyObject* unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(klineage_recorder_size());
}

static PyMethodDef shim_methods[] = {
    {"view", view, METH_VARARGS, "memory as a memoryview"},
    {"mark", mark, METH_O, "mark the extension's functions' calls for the recorder"},
    {"start_recording", start_recording, METH_NOARGS, "turn the op recorder on, for good"},
    {"forward", forward, METH_O, "whether the host is inside a forward"},
    {"recorded", recorded, METH_NOARGS, "the recorder's lines"},
    {"recorded_size", recorded_size, METH_NOARGS, "how many lines the recorder has"},
    {NULL}};
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

#else /* __cplusplus: the op recorder */
/* What the ModelNew's forward asks torch to run, seen where every op enters the dispatcher: a
 * global RecordFunction callback (torch's profiler hook), on every thread, with no Python
 * frame, mode or key of its own, and about a microsecond per op. The host turns it on before
 * kernel.py runs, in every runner alike. Each op is filed by
 * where it ran: in an extension call (marked by the shim), or outside one in a forward with
 * the op it ran inside (the trusted side unfolds composite ops into what they ran), or on a
 * thread other than the host's outside a forward (one the extension left running). Ops the host
 * runs itself outside a forward (kernel.py's import, building the models, the views and copies
 * around each call) are not the forward's and are left out. It stays on through the calls: an
 * op first seen there was not in what the trace judged (the host refuses the call). */
#include <ATen/record_function.h>
#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace {

struct Recording {
    std::mutex lock;
    std::set<std::string> names; /* every op name seen, once: the stacks below point into it */
    std::set<std::string> extension;
    std::set<std::pair<std::string, std::string>> forward; /* (the op it ran inside or "", op) */
    std::string report;
    at::CallbackHandle handle = 0;
    pthread_t host{};
};

/* Built on first use: this object's static initializers may run after the shim's constructor. */
Recording& recording() {
    static Recording instance;
    return instance;
}

long extension_calls; /* changed with GCC's atomic builtins, from any thread */
int in_forward;
/* The ops each thread is inside. Plain data: a thread-local with a destructor registers it under
 * the loader's lock, which the loading thread holds all through start(). */
constexpr int kDepth = 64;
thread_local const std::string* callers[kDepth];
thread_local int depth;

std::string op_name(const at::RecordFunction& fn) {
    auto op = fn.operator_name();
    if (!op) return fn.name();
    return op->overload_name.empty() ? op->name : op->name + "." + op->overload_name;
}

std::unique_ptr<at::ObserverContext> on_op_enter(const at::RecordFunction& fn) {
    const std::string* caller = depth > 0 ? callers[std::min(depth, kDepth) - 1] : nullptr;
    const std::string* name = nullptr;
    bool extension = __atomic_load_n(&extension_calls, __ATOMIC_SEQ_CST) > 0;
    bool forward = __atomic_load_n(&in_forward, __ATOMIC_SEQ_CST) != 0;
    Recording& r = recording();
    if (forward || !pthread_equal(pthread_self(), r.host)) { /* not the host's own set-up */
        std::lock_guard<std::mutex> guard(r.lock);
        name = &*r.names.insert(op_name(fn)).first;
        if (extension || !forward)
            r.extension.insert(*name);
        else
            r.forward.emplace(caller ? *caller : std::string(), *name);
    }
    if (depth < kDepth) callers[depth] = name;
    depth++;
    return nullptr;
}

void on_op_exit(const at::RecordFunction&, at::ObserverContext*) {
    if (depth > 0) depth--;
}

}  // namespace

extern "C" {

int klineage_recorder_start(void) {
    Recording& r = recording();
    try {
        std::lock_guard<std::mutex> guard(r.lock);
        r.extension.clear();
        r.forward.clear();
        r.host = pthread_self();
        r.handle = at::addGlobalCallback(at::RecordFunctionCallback(on_op_enter, on_op_exit)
                                             .needsInputs(false)
                                             .needsOutputs(false)
                                             .needsIds(false)
                                             .scopes({at::RecordScope::FUNCTION}));
    } catch (...) {
        return -1;
    }
    return 0;
}

/* One line per op: "e\t<op>" in an extension call, "f\t<caller>\t<op>" outside one. */
const char* klineage_recorder_report(void) {
    Recording& r = recording();
    std::lock_guard<std::mutex> guard(r.lock);
    r.report.clear();
    for (const auto& name : r.extension) r.report += "e\t" + name + "\n";
    for (const auto& edge : r.forward) r.report += "f\t" + edge.first + "\t" + edge.second + "\n";
    return r.report.c_str();
}

long klineage_recorder_size(void) {
    Recording& r = recording();
    std::lock_guard<std::mutex> guard(r.lock);
    return static_cast<long>(r.extension.size() + r.forward.size());
}

void klineage_recorder_forward(int inside) { __atomic_store_n(&in_forward, inside, __ATOMIC_SEQ_CST); }

void klineage_recorder_enter(void) { __atomic_add_fetch(&extension_calls, 1, __ATOMIC_SEQ_CST); }

void klineage_recorder_leave(void) { __atomic_sub_fetch(&extension_calls, 1, __ATOMIC_SEQ_CST); }

}  /* extern "C" */
#endif
