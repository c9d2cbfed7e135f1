/* pyaten._accel: the optional compiled accelerator of the small-operator call path.
 *
 * Note: the accelerator (the long form is in pyaten/core/accel.py)
 *     Two layers of the pure-Python call path have a C equivalent here, each a drop-in
 *     replacement taken when this module was built and PYATEN_NO_ACCEL is not set:
 *
 *     - `new_row_major(sizes, dtype, device)`: a new row-major CPU tensor with its Storage,
 *       the Storage's uint8 bytes and the tensor's cached NumPy view, built in one call
 *       (core/broadcast.py's Python function is the reference and the fallback: any other
 *       device, complex32, or an allocation error goes there).
 *     - `unary(...)`/`binary(...)`: the structured fast functions (Note: the structured fast
 *       path, in pyaten/native/fastpath.py): the same checks in the same order, the same
 *       NumPy call into the same arrays, None where the Python function declines.
 *
 *     Tensor and Storage stay Python classes with __slots__; this module writes their slots
 *     at the offsets their member descriptors report (read once, in `setup_core`), so an
 *     object made here is indistinguishable from one made by `Tensor._make`.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#ifndef NPY_2_0_API_VERSION  /* NumPy 1.x headers: the field itself */
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

/* Raised with every change of this module's Python-facing API; pyaten/core/accel.py loads
 * only the version it was written for (a stale build is reported, not used). */
#define ACCEL_VERSION 5

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))
#define MAX_DIMS 64
#define CACHE_LIMIT 4096

/* --- state, filled by setup_core / setup_quiet --------------------------------------- */

static PyTypeObject *tensor_type = NULL;
static PyTypeObject *storage_type = NULL;
static PyObject *version_counter_type = NULL;
static PyObject *py_make_view = NULL;       /* the reference, for subclasses */
static PyObject *cpu_device = NULL;
static PyObject *cpu_keyset = NULL;
static PyObject *np_descrs = NULL;          /* dict: pyaten dtype -> numpy dtype (plain ones) */
static PyObject *py_new_row_major = NULL;   /* the reference, for everything else */
static PyObject *py_strides_of = NULL;      /* sizes -> row-major strides (core's cache) */
static PyObject *strides_cache = NULL;      /* dict: sizes -> row-major strides */

static PyObject *py_row_major_ordered = NULL;
static PyObject *py_quiet_call = NULL;
static PyObject *quiet_thread = NULL;       /* the threading.local holding `context` */
static PyObject *quiet_var = NULL;          /* ContextVar: inside the quiet context */

static PyObject *s_keyset, *s_cpu, *s_context, *s_item, *s_numpy, *s_version_counter, *s_value;
static PyObject *kw_out;                    /* ("out",) */
static PyObject *one, *zero;
static PyObject *empty_tuple;

/* Tensor slots */
static Py_ssize_t T_storage, T_sizes, T_strides, T_offset, T_dtype, T_device, T_keyset, T_np,
    T_vc, T_base, T_requires_grad, T_grad_fn, T_grad, T_hooks, T_retains_grad, T_output_nr,
    T_wrapped_number, T_grad_acc, T_fw_grad;
/* Storage slots */
static Py_ssize_t S_data, S_nbytes, S_device, S_resizable;

static int
slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "_accel.setup_core(): %s.%s is not a slot",
                     type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "_accel.setup_core(): %s.%s is not an object slot",
                     type->tp_name, name);
        return -1;
    }
    *offset = member->offset;
    return 0;
}

static inline void
set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    PyObject **where = (PyObject **)((char *)obj + offset);
    PyObject *old = *where;
    Py_INCREF(value);
    *where = value;
    Py_XDECREF(old);
}

static PyObject *
setup_core(PyObject *module, PyObject *args)
{
    PyObject *tensor, *storage, *counter, *cpu, *view_reference;
    if (!PyArg_ParseTuple(args, "O!O!OOO:setup_core", &PyType_Type, &tensor, &PyType_Type,
                          &storage, &counter, &cpu, &view_reference)) {
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)tensor, *s = (PyTypeObject *)storage;
    if (slot_offset(t, "_storage", &T_storage) || slot_offset(t, "_sizes", &T_sizes)
        || slot_offset(t, "_strides", &T_strides) || slot_offset(t, "_offset", &T_offset)
        || slot_offset(t, "_dtype", &T_dtype) || slot_offset(t, "_device", &T_device)
        || slot_offset(t, "_keyset", &T_keyset) || slot_offset(t, "_np", &T_np)
        || slot_offset(t, "_vc", &T_vc) || slot_offset(t, "_base", &T_base)
        || slot_offset(t, "_requires_grad", &T_requires_grad)
        || slot_offset(t, "grad_fn", &T_grad_fn) || slot_offset(t, "_grad", &T_grad)
        || slot_offset(t, "_hooks", &T_hooks) || slot_offset(t, "retains_grad", &T_retains_grad)
        || slot_offset(t, "output_nr", &T_output_nr)
        || slot_offset(t, "_wrapped_number", &T_wrapped_number)
        || slot_offset(t, "_grad_acc", &T_grad_acc) || slot_offset(t, "_fw_grad", &T_fw_grad)
        || slot_offset(s, "data", &S_data) || slot_offset(s, "nbytes", &S_nbytes)
        || slot_offset(s, "device", &S_device) || slot_offset(s, "resizable", &S_resizable)) {
        return NULL;
    }
    PyObject *keyset = PyObject_GetAttr(cpu, s_keyset);
    if (keyset == NULL) {
        return NULL;
    }
    Py_XSETREF(cpu_keyset, keyset);
    Py_INCREF(tensor);
    Py_XSETREF(tensor_type, t);
    Py_INCREF(storage);
    Py_XSETREF(storage_type, s);
    Py_INCREF(counter);
    Py_XSETREF(version_counter_type, counter);
    Py_INCREF(cpu);
    Py_XSETREF(cpu_device, cpu);
    Py_INCREF(view_reference);
    Py_XSETREF(py_make_view, view_reference);
    Py_RETURN_NONE;
}

static PyObject *
setup_alloc(PyObject *module, PyObject *args)
{
    PyObject *descrs, *fallback, *strides_fn;
    if (!PyArg_ParseTuple(args, "O!OO:setup_alloc", &PyDict_Type, &descrs, &fallback,
                          &strides_fn)) {
        return NULL;
    }
    PyObject *cache = PyDict_New();
    if (cache == NULL) {
        return NULL;
    }
    Py_XSETREF(strides_cache, cache);
    Py_INCREF(descrs);
    Py_XSETREF(np_descrs, descrs);
    Py_INCREF(fallback);
    Py_XSETREF(py_new_row_major, fallback);
    Py_INCREF(strides_fn);
    Py_XSETREF(py_strides_of, strides_fn);
    Py_RETURN_NONE;
}

static PyObject *
setup_quiet(PyObject *module, PyObject *args)
{
    PyObject *ordered, *quiet_call, *thread, *var;
    if (!PyArg_ParseTuple(args, "OOOO:setup_quiet", &ordered, &quiet_call, &thread, &var)) {
        return NULL;
    }
    if (!PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "_accel.setup_quiet(): the flag must be a ContextVar");
        return NULL;
    }
    Py_INCREF(ordered);
    Py_XSETREF(py_row_major_ordered, ordered);
    Py_INCREF(quiet_call);
    Py_XSETREF(py_quiet_call, quiet_call);
    Py_INCREF(thread);
    Py_XSETREF(quiet_thread, thread);
    Py_INCREF(var);
    Py_XSETREF(quiet_var, var);
    Py_RETURN_NONE;
}

/* --- Tensor._make and Tensor._make_view ----------------------------------------------- */

/* A new exact Tensor with every slot as `Tensor._make` sets it (its key set `keyset`).
 * Takes over the references of `storage` and `strides` ("steals" them), borrows the rest. */
static PyObject *
new_tensor_of(PyTypeObject *type, PyObject *storage, PyObject *sizes, PyObject *strides,
              PyObject *offset, PyObject *dtype, PyObject *device, PyObject *keyset)
{
    PyObject *t = type->tp_alloc(type, 0);
    if (t == NULL) {
        Py_DECREF(storage);
        Py_DECREF(strides);
        return NULL;
    }
    SLOT(t, T_storage) = storage; /* fresh object: the slots are empty, references move in */
    set_slot(t, T_sizes, sizes);
    SLOT(t, T_strides) = strides;
    set_slot(t, T_offset, offset);
    set_slot(t, T_dtype, dtype);
    set_slot(t, T_device, device);
    set_slot(t, T_keyset, keyset);
    set_slot(t, T_np, Py_None);
    set_slot(t, T_vc, Py_None);
    set_slot(t, T_base, Py_None);
    set_slot(t, T_requires_grad, Py_False);
    set_slot(t, T_grad_fn, Py_None);
    set_slot(t, T_grad, Py_None);
    set_slot(t, T_hooks, Py_None);
    set_slot(t, T_retains_grad, Py_False);
    set_slot(t, T_output_nr, zero);
    set_slot(t, T_wrapped_number, Py_False);
    set_slot(t, T_grad_acc, Py_None);
    set_slot(t, T_fw_grad, Py_None);
    return t;
}

static PyObject *
new_tensor(PyObject *storage, PyObject *sizes, PyObject *strides, PyObject *offset,
           PyObject *dtype, PyObject *device, PyObject *keyset)
{
    return new_tensor_of(tensor_type, storage, sizes, strides, offset, dtype, device, keyset);
}

/* A Storage of `nbytes` on `device` that holds no bytes (a new reference) */
static PyObject *
dataless_storage(PyObject *nbytes, PyObject *device)
{
    PyObject *storage = storage_type->tp_alloc(storage_type, 0);
    if (storage != NULL) {
        set_slot(storage, S_data, Py_None);
        set_slot(storage, S_nbytes, nbytes);
        set_slot(storage, S_device, device);
        set_slot(storage, S_resizable, Py_True);
    }
    return storage;
}

/* make_dataless(cls, sizes, strides, offset, dtype, device, keyset, nbytes): core/tensor.py's
 * `make_dataless`, an instance of the Tensor subclass `cls` over a Storage of `nbytes` that
 * holds no bytes (a wrapper's: vmap's BatchedTensor); the Python function is the reference. */
static PyObject *
make_dataless(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "make_dataless() takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyaten._accel: setup_core() was not called");
        return NULL;
    }
    PyObject *cls = args[0];
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "make_dataless(): cls must be a Tensor subclass");
        return NULL;
    }
    PyObject *storage = dataless_storage(args[7], args[5]);
    if (storage == NULL) {
        return NULL;
    }
    Py_INCREF(args[2]);
    return new_tensor_of((PyTypeObject *)cls, storage, args[1], args[2], args[3], args[4],
                         args[5], args[6]);
}

static PyObject *
device_keyset(PyObject *device)
{
    if (device == cpu_device) {
        Py_INCREF(cpu_keyset);
        return cpu_keyset;
    }
    return PyObject_GetAttr(device, s_keyset);
}

/* Tensor._make(storage, sizes, strides, offset, dtype, device) */
static PyObject *
make(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "_make() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyaten._accel: setup_core() was not called");
        return NULL;
    }
    PyObject *keyset = device_keyset(args[5]);
    if (keyset == NULL) {
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_INCREF(args[2]);
    PyObject *t = new_tensor(args[0], args[1], args[2], args[3], args[4], args[5], keyset);
    Py_DECREF(keyset);
    return t;
}

/* Tensor._make_view(base, sizes, strides, offset), for an exact Tensor `base` (a subclass
 * goes to the Python function, which may wrap the view). */
static PyObject *
make_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "_make_view() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyaten._accel: setup_core() was not called");
        return NULL;
    }
    PyObject *base = args[0];
    if (Py_TYPE(base) != tensor_type) {
        return PyObject_Vectorcall(py_make_view, args, 4, NULL);
    }
    PyObject *storage = SLOT(base, T_storage), *dtype = SLOT(base, T_dtype);
    PyObject *device = SLOT(base, T_device), *keyset = SLOT(base, T_keyset);
    PyObject *root = SLOT(base, T_base);
    if (!storage || !dtype || !device || !keyset || !root) {
        return PyObject_Vectorcall(py_make_view, args, 4, NULL); /* its AttributeError */
    }
    PyObject *counter = SLOT(base, T_vc);
    if (counter == NULL || counter == Py_None) {
        counter = PyObject_CallNoArgs(version_counter_type);
        if (counter == NULL) {
            return NULL;
        }
        set_slot(base, T_vc, counter);
    }
    else {
        Py_INCREF(counter);
    }
    Py_INCREF(storage);
    Py_INCREF(args[2]);
    PyObject *v = new_tensor(storage, args[1], args[2], args[3], dtype, device, keyset);
    if (v == NULL) {
        Py_DECREF(counter);
        return NULL;
    }
    set_slot(v, T_vc, counter);
    Py_DECREF(counter);
    set_slot(v, T_base, root == Py_None ? base : root);
    return v;
}

/* --- the result's allocation ----------------------------------------------------------- */

/* Row-major strides of `sizes`: new reference, NULL with an error set. */
static PyObject *
strides_of(PyObject *sizes)
{
    PyObject *found = PyDict_GetItemWithError(strides_cache, sizes);
    if (found != NULL) {
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    found = PyObject_CallOneArg(py_strides_of, sizes);
    if (found != NULL && PyDict_GET_SIZE(strides_cache) < CACHE_LIMIT
        && PyDict_SetItem(strides_cache, sizes, found) < 0) {
        Py_CLEAR(found);
    }
    return found;
}

static PyObject *
fallback_new(PyObject *sizes, PyObject *dtype, PyObject *device)
{
    PyObject *args[3] = {sizes, dtype, device};
    return PyObject_Vectorcall(py_new_row_major, args, 3, NULL);
}

/* A new row-major tensor of `sizes`, `dtype` on `device`: new reference or NULL. */
static PyObject *
make_row_major(PyObject *sizes, PyObject *dtype, PyObject *device)
{
    if (device != cpu_device || !PyTuple_CheckExact(sizes)) {
        return fallback_new(sizes, dtype, device);
    }
    PyObject *descr = PyDict_GetItemWithError(np_descrs, dtype);
    if (descr == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        return fallback_new(sizes, dtype, device); /* complex32 and other special dtypes */
    }
    Py_ssize_t nd = PyTuple_GET_SIZE(sizes);
    if (nd > MAX_DIMS) {
        return fallback_new(sizes, dtype, device);
    }
    npy_intp dims[MAX_DIMS], byte_strides[MAX_DIMS];
    Py_ssize_t itemsize = PyDataType_ELSIZE((PyArray_Descr *)descr);
    Py_ssize_t numel = 1;
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject *size = PyTuple_GET_ITEM(sizes, i);
        if (!PyLong_CheckExact(size)) {
            return fallback_new(sizes, dtype, device);
        }
        Py_ssize_t n = PyLong_AsSsize_t(size);
        if (n < 0) {
            PyErr_Clear();
            return fallback_new(sizes, dtype, device);
        }
        dims[i] = n;
        if (n != 0 && numel > PY_SSIZE_T_MAX / n) {
            return fallback_new(sizes, dtype, device); /* Python's ints and errors */
        }
        numel *= n;
    }
    if (numel > PY_SSIZE_T_MAX / (itemsize ? itemsize : 1)) {
        return fallback_new(sizes, dtype, device);
    }
    PyObject *strides = strides_of(sizes);
    if (strides == NULL) {
        return NULL;
    }
    if (!PyTuple_CheckExact(strides) || PyTuple_GET_SIZE(strides) != nd) {
        Py_DECREF(strides);
        return fallback_new(sizes, dtype, device);
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        Py_ssize_t stride = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
        if (stride == -1 && PyErr_Occurred()) {
            Py_DECREF(strides);
            return NULL;
        }
        byte_strides[i] = stride * itemsize;
    }

    npy_intp nbytes = numel * itemsize;
    PyObject *data = PyArray_SimpleNew(1, &nbytes, NPY_UINT8);
    if (data == NULL) {
        Py_DECREF(strides);
        if (PyErr_ExceptionMatches(PyExc_MemoryError)
            || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return fallback_new(sizes, dtype, device); /* PyTorch's allocation error */
        }
        return NULL;
    }
    Py_INCREF(descr); /* stolen by NewFromDescr */
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)descr, (int)nd, dims,
                                          byte_strides, PyArray_DATA((PyArrayObject *)data),
                                          NPY_ARRAY_WRITEABLE, NULL);
    if (view == NULL) {
        Py_DECREF(strides);
        Py_DECREF(data);
        return NULL;
    }
    Py_INCREF(data);
    if (PyArray_SetBaseObject((PyArrayObject *)view, data) < 0) {
        Py_DECREF(strides);
        Py_DECREF(data);
        Py_DECREF(view);
        return NULL;
    }
    PyObject *nbytes_obj = PyLong_FromSsize_t(nbytes);
    PyObject *storage = nbytes_obj ? storage_type->tp_alloc(storage_type, 0) : NULL;
    if (storage == NULL) {
        Py_DECREF(strides);
        Py_DECREF(data);
        Py_DECREF(view);
        Py_XDECREF(nbytes_obj);
        return NULL;
    }
    SLOT(storage, S_data) = data; /* fresh object: the slots are empty, references move in */
    SLOT(storage, S_nbytes) = nbytes_obj;
    set_slot(storage, S_device, device);
    set_slot(storage, S_resizable, Py_True);

    PyObject *t = new_tensor(storage, sizes, strides, zero, dtype, device, cpu_keyset);
    if (t == NULL) {
        Py_DECREF(view);
        return NULL;
    }
    set_slot(t, T_np, view);
    Py_DECREF(view);
    return t;
}

static int
core_ready(void)
{
    if (tensor_type == NULL || np_descrs == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "pyaten._accel: setup_core() and setup_alloc() were not called");
        return 0;
    }
    return 1;
}

static PyObject *
new_row_major(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "new_row_major() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!core_ready()) {
        return NULL;
    }
    return make_row_major(args[0], args[1], args[2]);
}

/* --- the structured fast functions ----------------------------------------------------- */

enum { UNARY = 0, UNARY_INPLACE = 1, BINARY = 2, BINARY_INPLACE = 3, CAT = 4 };

/* The C loops a fast function may run itself (Note: the small-operator loops, below). */
enum { LOOP_NONE = 0, LOOP_RELU = 1, LOOP_ADD = 2, LOOP_SUB = 3, LOOP_MUL = 4 };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    int alpha;            /* a third argument, `alpha`, that must be the int 1 */
    int loop;             /* LOOP_*: the element loop it runs itself on small inputs */
    PyObject *fn;         /* the NumPy function, called as fn(*arrays, out=array) */
    PyObject *kernels;    /* the stub's device -> kernel dict, or None */
    PyObject *kernel;     /* the "cpu" kernel the function was made with (None: none) */
    PyObject *dtypes;     /* frozenset of the dtypes it accepts */
    PyObject *numbers;    /* frozenset: dtypes a wrapped Python number may join */
    PyObject *wrapped;    /* frozenset: the dtypes of wrapped Python numbers */
    PyObject *out_dtype;  /* the result's dtype, or None for the input's */
    PyObject *name;
    PyObject *small;      /* unary: the ufunc `fn` runs on a small input, or a callable
                           * n -> that ufunc or None; None: none (Note: the small-operator
                           * loops) */
} FastObject;

static PyTypeObject Fast_Type;

/* `Tensor._numpy()`'s new view, made here for an exact Tensor whose storage holds a NumPy
 * array of bytes, a plain dtype, non-negative strides, no empty dim, all inside the bytes
 * (the rest, errors included, is the method's): cached in the tensor. New reference, or
 * NULL without an error set when not taken. */
static PyObject *
new_view_of(PyObject *t, PyObject *storage)
{
    PyObject *data = SLOT(storage, S_data);
    PyObject *sizes = SLOT(t, T_sizes), *strides = SLOT(t, T_strides);
    PyObject *offset_obj = SLOT(t, T_offset), *dtype = SLOT(t, T_dtype);
    if (Py_TYPE(t) != tensor_type || data == NULL || Py_TYPE(data) != &PyArray_Type
        || sizes == NULL || strides == NULL || offset_obj == NULL || dtype == NULL
        || !PyTuple_CheckExact(sizes) || !PyTuple_CheckExact(strides)
        || PyTuple_GET_SIZE(sizes) != PyTuple_GET_SIZE(strides)
        || PyTuple_GET_SIZE(sizes) > MAX_DIMS || !PyLong_CheckExact(offset_obj)
        || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)data)) {
        return NULL;
    }
    PyObject *descr = PyDict_GetItemWithError(np_descrs, dtype);
    if (descr == NULL) {
        return NULL; /* (an error, if any, is cleared by the caller) */
    }
    Py_ssize_t itemsize = PyDataType_ELSIZE((PyArray_Descr *)descr);
    Py_ssize_t nd = PyTuple_GET_SIZE(sizes), offset = PyLong_AsSsize_t(offset_obj);
    if (offset < 0) {
        return NULL;
    }
    npy_intp dims[MAX_DIMS], byte_strides[MAX_DIMS];
    Py_ssize_t last = offset; /* the last element's index */
    for (Py_ssize_t i = 0; i < nd; i++) {
        Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GET_ITEM(sizes, i));
        Py_ssize_t stride = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
        if (size <= 0 || stride < 0 || (stride > 0 && size - 1 > (PY_SSIZE_T_MAX - last)
                                                                 / stride)) {
            return NULL;
        }
        dims[i] = size;
        byte_strides[i] = stride * itemsize;
        last += (size - 1) * stride;
    }
    npy_intp nbytes = PyArray_NBYTES((PyArrayObject *)data);
    if (last >= nbytes / (itemsize ? itemsize : 1) || (last + 1) * itemsize > nbytes) {
        return NULL;
    }
    int flags = PyArray_ISWRITEABLE((PyArrayObject *)data) ? NPY_ARRAY_WRITEABLE : 0;
    Py_INCREF(descr); /* stolen */
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)descr, (int)nd, dims,
                                          byte_strides,
                                          PyArray_BYTES((PyArrayObject *)data)
                                              + offset * itemsize,
                                          flags, NULL);
    if (view == NULL) {
        return NULL;
    }
    Py_INCREF(data);
    if (PyArray_SetBaseObject((PyArrayObject *)view, data) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    set_slot(t, T_np, view);
    return view;
}

/* `t._numpy()`: its cached view when still valid. New reference. */
static PyObject *
array_of(PyObject *t)
{
    PyObject *view = SLOT(t, T_np);
    PyObject *storage = SLOT(t, T_storage);
    if (view != NULL && storage != NULL && PyArray_Check(view)
        && Py_TYPE(storage) == storage_type
        && PyArray_BASE((PyArrayObject *)view) == SLOT(storage, S_data)) {
        Py_INCREF(view);
        return view;
    }
    if (storage != NULL && Py_TYPE(storage) == storage_type) {
        view = new_view_of(t, storage);
        if (view != NULL) {
            return view;
        }
        PyErr_Clear();
    }
    return PyObject_CallMethodNoArgs(t, s_numpy);
}

/* 1: the tensor's layout allows the fast path (row-major or row-major ordered), 0: not,
 * -1: error. */
static int
layout_ok(PyObject *sizes, PyObject *strides)
{
    if (sizes == NULL || strides == NULL) {
        return 0;
    }
    PyObject *expected = strides_of(sizes);
    if (expected == NULL) {
        return -1;
    }
    int same = PyObject_RichCompareBool(strides, expected, Py_EQ); /* identity first */
    Py_DECREF(expected);
    if (same != 0) {
        return same;
    }
    PyObject *args[2] = {sizes, strides};
    PyObject *ordered = PyObject_Vectorcall(py_row_major_ordered, args, 2, NULL);
    if (ordered == NULL) {
        return -1;
    }
    int found = PyObject_IsTrue(ordered);
    Py_DECREF(ordered);
    return found;
}

/* 1: the stub still holds the kernel the function was made with, 0: replaced, -1: error. */
static int
kernel_unchanged(FastObject *f)
{
    if (f->kernels == Py_None) {
        return 1;
    }
    PyObject *current = PyDict_GetItemWithError(f->kernels, s_cpu);
    if (current == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        current = Py_None;
    }
    return current == f->kernel;
}

/* call[0](*call[1:nargs], **kwnames) with floating-point warnings off (Note: quiet floating
 * point, in pyaten/native/structured.py): inside the thread's quiet context, entered as
 * `context.run` enters it; through `quiet_call` when the thread has none yet or is already
 * inside. New reference or NULL. */
static PyObject *
quiet_vectorcall(PyObject *const *call, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *context = PyObject_GetAttr(quiet_thread, s_context);
    if (context == NULL) {
        return NULL;
    }
    int quiet = 0;
    if (context != Py_None) {
        PyObject *flag;
        if (PyContextVar_Get(quiet_var, Py_False, &flag) < 0) {
            Py_DECREF(context);
            return NULL;
        }
        quiet = PyObject_IsTrue(flag);
        Py_DECREF(flag);
        if (quiet < 0) {
            Py_DECREF(context);
            return NULL;
        }
    }
    if (context == Py_None || quiet) {
        Py_DECREF(context);
        return PyObject_Vectorcall(py_quiet_call, call, nargs, kwnames);
    }
    if (!PyContext_CheckExact(context)) {
        Py_DECREF(context);
        PyErr_SetString(PyExc_TypeError, "pyaten._accel: the quiet context is not a Context");
        return NULL;
    }
    if (PyContext_Enter(context) < 0) {
        Py_DECREF(context);
        return NULL;
    }
    PyObject *result = PyObject_Vectorcall(call[0], call + 1, nargs - 1, kwnames);
    if (result == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyContext_Exit(context);
        PyErr_Restore(type, value, tb);
    }
    else if (PyContext_Exit(context) < 0) {
        Py_CLEAR(result);
    }
    Py_DECREF(context);
    return result;
}

/* fn(*arrays, out=out), quietly (n is 1 or 2). */
static PyObject *
call_quiet(PyObject *fn, PyObject **arrays, Py_ssize_t n, PyObject *out)
{
    PyObject *call[4] = {fn, NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < n; i++) {
        call[i + 1] = arrays[i];
    }
    call[n + 1] = out;
    return quiet_vectorcall(call, n + 1, kw_out);
}

/* quiet(fn, *args, **kwargs): fastpath.quiet and fastpath.run_quiet. */
static PyObject *
quiet(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "quiet() needs the function to call");
        return NULL;
    }
    if (quiet_thread == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyaten._accel: setup_quiet() was not called");
        return NULL;
    }
    return quiet_vectorcall(args, nargs, kwnames);
}

/* array(t): `t._numpy()`, its cached view when still valid (fastpath.array). */
static PyObject *
array(PyObject *module, PyObject *t)
{
    if (tensor_type == NULL || !PyObject_TypeCheck(t, tensor_type)) {
        return PyObject_CallMethodNoArgs(t, s_numpy);
    }
    return array_of(t);
}

static int
bump_version(PyObject *self)
{
    PyObject *counter = SLOT(self, T_vc);
    if (counter == NULL || counter == Py_None) {
        counter = PyObject_GetAttr(self, s_version_counter); /* the property makes it */
    }
    else {
        Py_INCREF(counter);
    }
    if (counter == NULL) {
        return -1;
    }
    PyObject *value = PyObject_GetAttr(counter, s_value);
    PyObject *bumped = value ? PyNumber_Add(value, one) : NULL;
    Py_XDECREF(value);
    int status = bumped ? PyObject_SetAttr(counter, s_value, bumped) : -1;
    Py_XDECREF(bumped);
    Py_DECREF(counter);
    return status;
}

#define DECLINE() do { Py_RETURN_NONE; } while (0)
#define CHECK(expr) do { int _ok = (expr); if (_ok < 0) return NULL; if (!_ok) DECLINE(); } \
    while (0)

static int
set_contains(PyObject *set, PyObject *key)
{
    if (key == NULL) {
        return 0;
    }
    return PySet_Contains(set, key);
}

/* Note: the small-operator loops
 *     On a small tensor, the NumPy call of a fast function costs more than the rest of the
 *     call (a 4x4 float32 `np.maximum(0, a, out=o)` ~1 us, PyTorch's whole relu ~1.2 us). The
 *     C code computes the result itself only where it gives the very bits of that call:
 *     - its own loops where every result is one exactly rounded IEEE operation (relu's
 *       select; add, sub and mul of two float32/float64 arrays or of one and a Python float,
 *       cast to the array's dtype first as NumPy's weak scalar), a copy (cat's memcpy per
 *       block), or NumPy's own order (sum's pairwise summation, below);
 *     - otherwise the NumPy ufunc's own inner loop, taken from the ufunc's loop table and
 *       called as the ufunc calls it on aligned contiguous arrays (once over all n elements):
 *       exp, sigmoid's expit, sin, div, the comparisons... and matmul (below);
 *     - (log_)softmax: the Numba rows loop the general path runs, in C (below).
 *     Each is taken on C-contiguous arrays of fewer than SMALL_LOOP elements (matmul: any
 *     size); anything else makes the NumPy call as before. FP flags raised here are never
 *     read (the calls they replace run with floating-point warnings off; NumPy clears the
 *     flags before each of its own loops). tests/test_accel_small_ops.py compares each with
 *     what it replaces, byte for byte. */
#define SMALL_LOOP 4096

/* 1: ran the loop (out written), 0: not applicable (the NumPy call instead). */
static int
small_unary_loop(int loop, PyObject *x_obj, PyObject *out_obj)
{
    PyArrayObject *x = (PyArrayObject *)x_obj, *out = (PyArrayObject *)out_obj;
    if (loop != LOOP_RELU || !PyArray_Check(x_obj) || !PyArray_Check(out_obj)
        || !PyArray_IS_C_CONTIGUOUS(x) || !PyArray_IS_C_CONTIGUOUS(out)) {
        return 0;
    }
    npy_intp n = PyArray_SIZE(x);
    int type = PyArray_TYPE(x);
    if (n >= SMALL_LOOP || PyArray_SIZE(out) != n || PyArray_TYPE(out) != type
        || !PyArray_ISWRITEABLE(out)) {
        return 0;
    }
    /* PyTorch's clamp_min(x, 0) as np.maximum(0, x): -0.0 and NaN stay as they are */
#define RELU_LOOP(T)                                                       \
    do {                                                                   \
        const T *a = (const T *)PyArray_DATA(x);                           \
        T *o = (T *)PyArray_DATA(out);                                     \
        for (npy_intp i = 0; i < n; i++) {                                 \
            T v = a[i];                                                    \
            o[i] = v < 0 ? (T)0 : v;                                       \
        }                                                                  \
    } while (0)
    switch (type) {
    case NPY_FLOAT: RELU_LOOP(npy_float); return 1;
    case NPY_DOUBLE: RELU_LOOP(npy_double); return 1;
    case NPY_BYTE: RELU_LOOP(npy_byte); return 1;
    case NPY_SHORT: RELU_LOOP(npy_short); return 1;
    case NPY_INT: RELU_LOOP(npy_int); return 1;
    case NPY_LONG: RELU_LOOP(npy_long); return 1;
    case NPY_LONGLONG: RELU_LOOP(npy_longlong); return 1;
    case NPY_UBYTE: /* never negative: a copy */
        memcpy(PyArray_DATA(out), PyArray_DATA(x), n);
        return 1;
    default: return 0;
    }
#undef RELU_LOOP
}

/* out = a (op) b, elementwise, for two same-shape arrays (out may be a). */
static int small_scalar_loop(int loop, PyObject *a_obj, PyObject *number, PyObject *out_obj);

static int
small_binary_loop(int loop, PyObject *a_obj, PyObject *b_obj, PyObject *out_obj)
{
    if (loop >= LOOP_ADD && PyFloat_CheckExact(b_obj)) {
        return small_scalar_loop(loop, a_obj, b_obj, out_obj);
    }
    if (loop < LOOP_ADD || !PyArray_Check(a_obj) || !PyArray_Check(b_obj)
        || !PyArray_Check(out_obj)) {
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)a_obj, *b = (PyArrayObject *)b_obj,
                  *out = (PyArrayObject *)out_obj;
    if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_IS_C_CONTIGUOUS(b)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        return 0;
    }
    npy_intp n = PyArray_SIZE(a);
    int type = PyArray_TYPE(a);
    if (n >= SMALL_LOOP || PyArray_SIZE(b) != n || PyArray_SIZE(out) != n
        || PyArray_TYPE(b) != type || PyArray_TYPE(out) != type) {
        return 0;
    }
    /* `b` may share memory with `out` only as the same array (a.add_(a)): each element is
     * read before it is written. */
    if (PyArray_DATA(b) != PyArray_DATA(out) && PyArray_DATA(a) != PyArray_DATA(out)) {
        char *o0 = PyArray_DATA(out), *b0 = PyArray_DATA(b), *a0 = PyArray_DATA(a);
        npy_intp bytes = n * PyArray_ITEMSIZE(out);
        if ((b0 < o0 + bytes && o0 < b0 + bytes) || (a0 < o0 + bytes && o0 < a0 + bytes)) {
            return 0;
        }
    }
#define BINARY_LOOP(T, OP)                                                 \
    do {                                                                   \
        const T *x = (const T *)PyArray_DATA(a);                           \
        const T *y = (const T *)PyArray_DATA(b);                           \
        T *o = (T *)PyArray_DATA(out);                                     \
        for (npy_intp i = 0; i < n; i++) {                                 \
            o[i] = x[i] OP y[i];                                           \
        }                                                                  \
    } while (0)
#define BINARY_TYPES(OP)                                                   \
    switch (type) {                                                        \
    case NPY_FLOAT: BINARY_LOOP(npy_float, OP); return 1;                  \
    case NPY_DOUBLE: BINARY_LOOP(npy_double, OP); return 1;                \
    default: return 0;                                                     \
    }
    switch (loop) {
    case LOOP_ADD: BINARY_TYPES(+)
    case LOOP_SUB: BINARY_TYPES(-)
    case LOOP_MUL: BINARY_TYPES(*)
    default: return 0;
    }
#undef BINARY_TYPES
#undef BINARY_LOOP
}

/* out = a (op) number for a Python float `number` (a wrapped number): NumPy casts it to the
 * array's dtype first (a weak scalar), then computes in that dtype; so does this loop. A
 * float that overflows float32 goes to NumPy (its cast). */
static int
small_scalar_loop(int loop, PyObject *a_obj, PyObject *number, PyObject *out_obj)
{
    if (!PyArray_Check(a_obj) || !PyArray_Check(out_obj)) {
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)a_obj, *out = (PyArrayObject *)out_obj;
    npy_intp n = PyArray_SIZE(a);
    int type = PyArray_TYPE(a);
    if (n >= SMALL_LOOP || PyArray_SIZE(out) != n || PyArray_TYPE(out) != type
        || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_IS_C_CONTIGUOUS(out)
        || !PyArray_ISWRITEABLE(out)
        || (PyArray_DATA(a) != PyArray_DATA(out)
            && (char *)PyArray_DATA(a) < (char *)PyArray_DATA(out) + PyArray_NBYTES(out)
            && (char *)PyArray_DATA(out) < (char *)PyArray_DATA(a) + PyArray_NBYTES(a))) {
        return 0;
    }
    double value = PyFloat_AS_DOUBLE(number);
#define SCALAR_LOOP(T, OP)                                                 \
    do {                                                                   \
        const T *x = (const T *)PyArray_DATA(a);                           \
        T *o = (T *)PyArray_DATA(out);                                     \
        T s = (T)value;                                                    \
        for (npy_intp i = 0; i < n; i++) {                                 \
            o[i] = x[i] OP s;                                              \
        }                                                                  \
    } while (0)
#define SCALAR_TYPES(OP)                                                   \
    if (type == NPY_DOUBLE) {                                              \
        SCALAR_LOOP(npy_double, OP);                                       \
        return 1;                                                          \
    }                                                                      \
    if (type == NPY_FLOAT && (isfinite((float)value) || !isfinite(value))) { \
        SCALAR_LOOP(npy_float, OP);                                        \
        return 1;                                                          \
    }                                                                      \
    return 0;
    switch (loop) {
    case LOOP_ADD: SCALAR_TYPES(+)
    case LOOP_SUB: SCALAR_TYPES(-)
    case LOOP_MUL: SCALAR_TYPES(*)
    default: return 0;
    }
#undef SCALAR_TYPES
#undef SCALAR_LOOP
}

/* A unary float fast function whose `fn` runs one NumPy ufunc on a small contiguous input
 * (exp's np.exp, sigmoid's SciPy expit, sin, log...): that ufunc's own inner loop for the
 * type, called as the ufunc calls it on two aligned contiguous arrays (one call over all n
 * elements), without the ufunc's set-up: the same bits by construction. 1: done, 0: not
 * applicable (the call of `fn`), -1: error. */
static int
small_ufunc_call(FastObject *f, PyObject *x_obj, PyObject *out_obj)
{
    if (f->small == Py_None || !PyArray_Check(x_obj) || !PyArray_Check(out_obj)) {
        return 0;
    }
    PyArrayObject *x = (PyArrayObject *)x_obj, *out = (PyArrayObject *)out_obj;
    int type = PyArray_TYPE(x);
    npy_intp n = PyArray_SIZE(x);
    if ((type != NPY_FLOAT && type != NPY_DOUBLE) || PyArray_TYPE(out) != type || n == 0
        || n >= SMALL_LOOP || PyArray_SIZE(out) != n || !PyArray_IS_C_CONTIGUOUS(x)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISALIGNED(x) || !PyArray_ISALIGNED(out)
        || !PyArray_ISWRITEABLE(out) || !PyArray_ISNOTSWAPPED(x)) {
        return 0;
    }
    PyObject *ufunc = f->small;
    int is_ufunc = strcmp(Py_TYPE(ufunc)->tp_name, "numpy.ufunc") == 0;
    if (!is_ufunc) {
        PyObject *size = PyLong_FromSsize_t(n);
        ufunc = size ? PyObject_CallOneArg(f->small, size) : NULL;
        Py_XDECREF(size);
        if (ufunc == NULL) {
            return -1;
        }
        if (strcmp(Py_TYPE(ufunc)->tp_name, "numpy.ufunc") != 0) {
            Py_DECREF(ufunc);
            return 0;
        }
    }
    PyUFuncObject *u = (PyUFuncObject *)ufunc;
    int found = 0;
    if (u->nin == 1 && u->nout == 1 && u->functions != NULL && u->types != NULL) {
        for (int i = 0; i < u->ntypes; i++) {
            if (u->types[2 * i] == type && u->types[2 * i + 1] == type) {
                char *data[2] = {PyArray_DATA(x), PyArray_DATA(out)};
                npy_intp dimensions[1] = {n};
                npy_intp steps[2] = {PyArray_ITEMSIZE(x), PyArray_ITEMSIZE(out)};
                u->functions[i](data, dimensions, steps, u->data ? u->data[i] : NULL);
                found = 1;
                break;
            }
        }
    }
    if (!is_ufunc) {
        Py_DECREF(ufunc);
    }
    return found;
}

static PyObject *
unary_call(FastObject *f, PyObject *self)
{
    if (!PyObject_TypeCheck(self, tensor_type)) {
        DECLINE();
    }
    PyObject *dtype = SLOT(self, T_dtype);
    CHECK(set_contains(f->dtypes, dtype));
    if (f->kind == UNARY_INPLACE && f->out_dtype != Py_None) {
        DECLINE();
    }
    if (SLOT(self, T_device) != cpu_device) {
        DECLINE();
    }
    CHECK(kernel_unchanged(f));
    PyObject *sizes = SLOT(self, T_sizes);
    CHECK(layout_ok(sizes, SLOT(self, T_strides)));
    PyObject *x = array_of(self);
    if (x == NULL) {
        return NULL;
    }
    if (f->kind == UNARY_INPLACE) {
        int small = small_unary_loop(f->loop, x, x) ? 1 : small_ufunc_call(f, x, x);
        PyObject *done = small < 0 ? NULL : small ? Py_NewRef(Py_None)
                                                  : call_quiet(f->fn, &x, 1, x);
        Py_DECREF(x);
        if (done == NULL) {
            return NULL;
        }
        Py_DECREF(done);
        if (bump_version(self) < 0) {
            return NULL;
        }
        Py_INCREF(self);
        return self;
    }
    PyObject *out = make_row_major(sizes, f->out_dtype == Py_None ? dtype : f->out_dtype,
                                   cpu_device);
    if (out == NULL) {
        Py_DECREF(x);
        return NULL;
    }
    PyObject *out_np = SLOT(out, T_np);
    int small = small_unary_loop(f->loop, x, out_np) ? 1 : small_ufunc_call(f, x, out_np);
    PyObject *done = small < 0 ? NULL : small ? Py_NewRef(Py_None)
                                              : call_quiet(f->fn, &x, 1, out_np);
    Py_DECREF(x);
    if (done == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(done);
    return out;
}

static int
is_true_slot(PyObject *obj, Py_ssize_t offset)
{
    PyObject *value = SLOT(obj, offset);
    if (value == NULL || value == Py_False) {
        return 0;
    }
    if (value == Py_True) {
        return 1;
    }
    return PyObject_IsTrue(value);
}

/* The two operands' arrays (new references in arrays[0..1]): 1, or 0 to decline, -1 error.
 * The checks of fastpath.binary's `operands`, in its order. */
static int
binary_operands(FastObject *f, PyObject *self, PyObject *other, PyObject **arrays)
{
    if (!PyObject_TypeCheck(other, tensor_type) || !PyObject_TypeCheck(self, tensor_type)) {
        return 0; /* a Scalar argument of the schema: the general path */
    }
    PyObject *dtype = SLOT(self, T_dtype);
    int ok = set_contains(f->dtypes, dtype);
    if (ok <= 0) {
        return ok;
    }
    if (SLOT(self, T_device) != cpu_device) {
        return 0;
    }
    ok = is_true_slot(self, T_wrapped_number);
    if (ok != 0) {
        return ok < 0 ? -1 : 0;
    }
    ok = kernel_unchanged(f);
    if (ok <= 0) {
        return ok;
    }
    PyObject *sizes = SLOT(self, T_sizes);
    PyObject *strides = SLOT(self, T_strides);
    ok = layout_ok(sizes, strides);
    if (ok <= 0) {
        return ok;
    }
    ok = is_true_slot(other, T_wrapped_number);
    if (ok < 0) {
        return -1;
    }
    if (ok) {
        ok = set_contains(f->numbers, dtype);
        if (ok <= 0) {
            return ok;
        }
        ok = set_contains(f->wrapped, SLOT(other, T_dtype));
        if (ok <= 0) {
            return ok; /* (a bool number: sub refuses it; the general path decides) */
        }
        /* A Python number: NumPy casts it to the array's dtype, as the general path does. */
        PyObject *number_array = array_of(other);
        if (number_array == NULL) {
            return -1;
        }
        PyObject *number = PyObject_CallMethodNoArgs(number_array, s_item);
        Py_DECREF(number_array);
        if (number == NULL) {
            return -1;
        }
        arrays[0] = array_of(self);
        if (arrays[0] == NULL) {
            Py_DECREF(number);
            return -1;
        }
        arrays[1] = number;
        return 1;
    }
    if (SLOT(other, T_dtype) != dtype || SLOT(other, T_device) != cpu_device) {
        return 0;
    }
    PyObject *other_sizes = SLOT(other, T_sizes);
    if (other_sizes == NULL) {
        return 0;
    }
    if (other_sizes != sizes) {
        ok = PyObject_RichCompareBool(other_sizes, sizes, Py_EQ);
        if (ok <= 0) {
            return ok;
        }
    }
    PyObject *other_strides = SLOT(other, T_strides);
    if (other_strides == NULL) {
        return 0;
    }
    if (other_strides != strides) {
        ok = PyObject_RichCompareBool(other_strides, strides, Py_EQ);
        if (ok < 0) {
            return -1;
        }
        if (!ok) {
            PyObject *args[2] = {sizes, other_strides};
            PyObject *ordered = PyObject_Vectorcall(py_row_major_ordered, args, 2, NULL);
            if (ordered == NULL) {
                return -1;
            }
            ok = PyObject_IsTrue(ordered);
            Py_DECREF(ordered);
            if (ok <= 0) {
                return ok;
            }
        }
    }
    arrays[0] = array_of(self);
    if (arrays[0] == NULL) {
        return -1;
    }
    arrays[1] = array_of(other);
    if (arrays[1] == NULL) {
        Py_CLEAR(arrays[0]);
        return -1;
    }
    return 1;
}

/* A binary fast function whose `fn` is a NumPy ufunc (div, the comparisons, maximum...), on
 * two small aligned C-contiguous float32/float64 arrays of one type and size: the ufunc's own
 * inner loop for (type, type) -> the output's type, called once over all n elements as the
 * ufunc calls it: the same bits (Note: the small-operator loops). 1: done, 0: the call. */
static int
small_binary_ufunc(FastObject *f, PyObject *a_obj, PyObject *b_obj, PyObject *out_obj)
{
    if (f->small == Py_None || !PyArray_Check(a_obj) || !PyArray_Check(b_obj)
        || !PyArray_Check(out_obj)) {
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)a_obj, *b = (PyArrayObject *)b_obj,
                  *out = (PyArrayObject *)out_obj;
    int type = PyArray_TYPE(a), out_type = PyArray_TYPE(out);
    npy_intp n = PyArray_SIZE(a);
    if ((type != NPY_FLOAT && type != NPY_DOUBLE) || PyArray_TYPE(b) != type || n == 0
        || n >= SMALL_LOOP || PyArray_SIZE(b) != n || PyArray_SIZE(out) != n
        || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_IS_C_CONTIGUOUS(b)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISALIGNED(a) || !PyArray_ISALIGNED(b)
        || !PyArray_ISALIGNED(out) || !PyArray_ISWRITEABLE(out) || !PyArray_ISNOTSWAPPED(a)
        || !PyArray_ISNOTSWAPPED(b) || !PyArray_ISNOTSWAPPED(out)) {
        return 0;
    }
    char *o0 = PyArray_DATA(out), *o1 = o0 + PyArray_NBYTES(out);
    for (int i = 0; i < 2; i++) {  /* an input is the output itself, or apart from it */
        char *x0 = PyArray_DATA(i ? b : a), *x1 = x0 + PyArray_NBYTES(i ? b : a);
        if (x0 != o0 && x0 < o1 && o0 < x1) {
            return 0;
        }
        if (x0 == o0 && PyArray_ITEMSIZE(i ? b : a) != PyArray_ITEMSIZE(out)) {
            return 0;
        }
    }
    PyUFuncObject *u = (PyUFuncObject *)f->small;
    if (u->nin != 2 || u->nout != 1 || u->functions == NULL || u->types == NULL) {
        return 0;
    }
    for (int i = 0; i < u->ntypes; i++) {
        const char *t = u->types + 3 * i;
        if (t[0] == type && t[1] == type && t[2] == out_type) {
            char *data[3] = {PyArray_DATA(a), PyArray_DATA(b), o0};
            npy_intp dimensions[1] = {n};
            npy_intp steps[3] = {PyArray_ITEMSIZE(a), PyArray_ITEMSIZE(b),
                                 PyArray_ITEMSIZE(out)};
            u->functions[i](data, dimensions, steps, u->data ? u->data[i] : NULL);
            return 1;
        }
    }
    return 0;
}

static PyObject *
binary_call(FastObject *f, PyObject *self, PyObject *other)
{
    PyObject *arrays[2] = {NULL, NULL};
    if (f->kind == BINARY_INPLACE) {
        if (f->out_dtype != Py_None) {
            DECLINE();
        }
        if (!PyObject_TypeCheck(other, tensor_type) || !PyObject_TypeCheck(self, tensor_type)) {
            DECLINE();
        }
        if (SLOT(other, T_storage) == SLOT(self, T_storage) && other != self) {
            DECLINE(); /* a partial overlap, maybe: the general path's rules */
        }
    }
    int ok = binary_operands(f, self, other, arrays);
    if (ok < 0) {
        return NULL;
    }
    if (!ok) {
        DECLINE();
    }
    PyObject *result, *done;
    if (f->kind == BINARY_INPLACE) {
        done = small_binary_loop(f->loop, arrays[0], arrays[1], arrays[0])
                       || small_binary_ufunc(f, arrays[0], arrays[1], arrays[0])
                   ? Py_NewRef(Py_None) : call_quiet(f->fn, arrays, 2, arrays[0]);
        result = self;
        Py_INCREF(result);
    }
    else {
        PyObject *dtype = f->out_dtype == Py_None ? SLOT(self, T_dtype) : f->out_dtype;
        result = make_row_major(SLOT(self, T_sizes), dtype, cpu_device);
        PyObject *out_np = result ? SLOT(result, T_np) : NULL;
        done = result == NULL ? NULL
               : small_binary_loop(f->loop, arrays[0], arrays[1], out_np)
                       || small_binary_ufunc(f, arrays[0], arrays[1], out_np)
                   ? Py_NewRef(Py_None) : call_quiet(f->fn, arrays, 2, out_np);
    }
    Py_DECREF(arrays[0]);
    Py_DECREF(arrays[1]);
    if (done == NULL) {
        Py_XDECREF(result);
        return NULL;
    }
    Py_DECREF(done);
    if (f->kind == BINARY_INPLACE && bump_version(self) < 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

static PyObject *cat(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

static PyObject *
fast_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastObject *f = (FastObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (f->kind == CAT && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        return cat(NULL, args, nargs);
    }
    Py_ssize_t expected = (f->kind >= BINARY ? 2 : 1) + f->alpha;
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%U() takes %zd positional arguments (%zd given)",
                     f->name, expected, nargs);
        return NULL;
    }
    if (f->alpha) {
        /* alpha 1 (an int, not True): the plain operation; any other alpha is checked and
         * scaled by the general path. */
        PyObject *alpha = args[expected - 1];
        if (!PyLong_CheckExact(alpha)) {
            DECLINE();
        }
        int is_one = PyObject_RichCompareBool(alpha, one, Py_EQ);
        if (is_one < 0) {
            return NULL;
        }
        if (!is_one) {
            DECLINE();
        }
    }
    if (quiet_thread == NULL || !core_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "pyaten._accel: setup_quiet() was not called");
        return NULL;
    }
    if (f->kind >= BINARY) {
        return binary_call(f, args[0], args[1]);
    }
    return unary_call(f, args[0]);
}

static int
fast_traverse(FastObject *f, visitproc visit, void *arg)
{
    Py_VISIT(f->fn);
    Py_VISIT(f->kernels);
    Py_VISIT(f->kernel);
    Py_VISIT(f->dtypes);
    Py_VISIT(f->numbers);
    Py_VISIT(f->wrapped);
    Py_VISIT(f->out_dtype);
    Py_VISIT(f->name);
    Py_VISIT(f->small);
    return 0;
}

static int
fast_clear(FastObject *f)
{
    Py_CLEAR(f->fn);
    Py_CLEAR(f->kernels);
    Py_CLEAR(f->kernel);
    Py_CLEAR(f->dtypes);
    Py_CLEAR(f->numbers);
    Py_CLEAR(f->wrapped);
    Py_CLEAR(f->out_dtype);
    Py_CLEAR(f->name);
    Py_CLEAR(f->small);
    return 0;
}

static void
fast_dealloc(FastObject *f)
{
    PyObject_GC_UnTrack(f);
    fast_clear(f);
    PyObject_GC_Del(f);
}

static PyObject *
fast_repr(FastObject *f)
{
    return PyUnicode_FromFormat("<pyaten._accel fast function %U>", f->name);
}

static PyObject *
fast_get_name(FastObject *f, void *closure)
{
    Py_INCREF(f->name);
    return f->name;
}

static int
fast_set_name(FastObject *f, PyObject *value, void *closure)
{
    if (value == NULL || !PyUnicode_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "__name__ must be set to a string object");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(f->name, value);
    return 0;
}

static PyGetSetDef fast_getset[] = {
    {"__name__", (getter)fast_get_name, (setter)fast_set_name, "the function's name", NULL},
    {NULL},
};

static PyTypeObject Fast_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pyaten._accel.FastFunction",
    .tp_basicsize = sizeof(FastObject),
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_vectorcall_offset = offsetof(FastObject, vectorcall),
    .tp_repr = (reprfunc)fast_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A structured fast function (Note: the structured fast path), in C.",
    .tp_traverse = (traverseproc)fast_traverse,
    .tp_clear = (inquiry)fast_clear,
    .tp_getset = fast_getset,
};

static PyObject *
new_fast(int kind, int alpha, int loop, PyObject *fn, PyObject *kernels, PyObject *kernel,
         PyObject *dtypes, PyObject *numbers, PyObject *wrapped, PyObject *out_dtype,
         PyObject *name)
{
    FastObject *f = PyObject_GC_New(FastObject, &Fast_Type);
    if (f == NULL) {
        return NULL;
    }
    f->vectorcall = fast_vectorcall;
    f->kind = kind;
    f->alpha = alpha;
    f->loop = loop;
    f->fn = Py_NewRef(fn);
    f->kernels = Py_NewRef(kernels);
    f->kernel = Py_NewRef(kernel);
    f->dtypes = Py_NewRef(dtypes);
    f->numbers = Py_NewRef(numbers);
    f->wrapped = Py_NewRef(wrapped);
    f->out_dtype = Py_NewRef(out_dtype);
    f->name = Py_NewRef(name);
    f->small = Py_NewRef(Py_None);
    PyObject_GC_Track(f);
    return (PyObject *)f;
}

static int
check_fast_args(PyObject *kernels, PyObject *dtypes, PyObject *numbers, PyObject *wrapped)
{
    if (kernels != Py_None && !PyDict_Check(kernels)) {
        PyErr_SetString(PyExc_TypeError, "_accel: kernels must be a dict or None");
        return -1;
    }
    if (!PyFrozenSet_CheckExact(dtypes) || !PyFrozenSet_CheckExact(numbers)
        || !PyFrozenSet_CheckExact(wrapped)) {
        PyErr_SetString(PyExc_TypeError, "_accel: dtype sets must be frozensets");
        return -1;
    }
    return 0;
}

/* unary(fn, kernels, kernel, dtypes, out_dtype, name) -> (functional, inplace) */
static PyObject *
make_unary(PyObject *module, PyObject *args)
{
    PyObject *fn, *kernels, *kernel, *dtypes, *out_dtype, *name;
    PyObject *small = Py_None;
    int loop = LOOP_NONE;
    if (!PyArg_ParseTuple(args, "OOOOOU|iO:unary", &fn, &kernels, &kernel, &dtypes, &out_dtype,
                          &name, &loop, &small)) {
        return NULL;
    }
    if (loop != LOOP_NONE && loop != LOOP_RELU) {
        PyErr_Format(PyExc_ValueError, "_accel.unary(): no unary loop %d", loop);
        return NULL;
    }
    if (check_fast_args(kernels, dtypes, dtypes, dtypes) < 0) {
        return NULL;
    }
    PyObject *inplace_name = PyUnicode_FromFormat("%U_", name);
    if (inplace_name == NULL) {
        return NULL;
    }
    PyObject *functional = new_fast(UNARY, 0, loop, fn, kernels, kernel, dtypes, dtypes,
                                    dtypes, out_dtype, name);
    PyObject *inplace = functional ? new_fast(UNARY_INPLACE, 0, loop, fn, kernels, kernel,
                                              dtypes, dtypes, dtypes, out_dtype, inplace_name)
                                   : NULL;
    Py_DECREF(inplace_name);
    if (inplace == NULL) {
        Py_XDECREF(functional);
        return NULL;
    }
    Py_SETREF(((FastObject *)functional)->small, Py_NewRef(small));
    Py_SETREF(((FastObject *)inplace)->small, Py_NewRef(small));
    return Py_BuildValue("(NN)", functional, inplace);
}

/* binary(fn, kernels, kernel, dtypes, numbers, wrapped, out_dtype, alpha, name)
 *   -> (functional, inplace) */
static PyObject *
make_binary(PyObject *module, PyObject *args)
{
    PyObject *fn, *kernels, *kernel, *dtypes, *numbers, *wrapped, *out_dtype, *name;
    int alpha, loop = LOOP_NONE;
    if (!PyArg_ParseTuple(args, "OOOOOOOpU|i:binary", &fn, &kernels, &kernel, &dtypes,
                          &numbers, &wrapped, &out_dtype, &alpha, &name, &loop)) {
        return NULL;
    }
    if (loop != LOOP_NONE && (loop < LOOP_ADD || loop > LOOP_MUL)) {
        PyErr_Format(PyExc_ValueError, "_accel.binary(): no binary loop %d", loop);
        return NULL;
    }
    if (kernels == Py_None) {
        PyErr_SetString(PyExc_TypeError, "_accel.binary(): kernels must be a dict");
        return NULL;
    }
    if (check_fast_args(kernels, dtypes, numbers, wrapped) < 0) {
        return NULL;
    }
    PyObject *inplace_name = PyUnicode_FromFormat("%U_", name);
    if (inplace_name == NULL) {
        return NULL;
    }
    PyObject *functional = new_fast(BINARY, alpha, loop, fn, kernels, kernel, dtypes, numbers,
                                    wrapped, out_dtype, name);
    PyObject *inplace = functional ? new_fast(BINARY_INPLACE, alpha, loop, fn, kernels, kernel,
                                              dtypes, numbers, wrapped, out_dtype,
                                              inplace_name)
                                   : NULL;
    Py_DECREF(inplace_name);
    if (inplace == NULL) {
        Py_XDECREF(functional);
        return NULL;
    }
    if (strcmp(Py_TYPE(fn)->tp_name, "numpy.ufunc") == 0 && ((PyUFuncObject *)fn)->nin == 2
        && ((PyUFuncObject *)fn)->nout == 1) {
        Py_SETREF(((FastObject *)functional)->small, Py_NewRef(fn));
        Py_SETREF(((FastObject *)inplace)->small, Py_NewRef(fn));
    }
    return Py_BuildValue("(NN)", functional, inplace);
}

/* --- sum's small loop (Note: the small-operator loops) ----------------------------------
 *
 * NumPy's `np.add.reduce` of a contiguous float32/float64 run is `0 + pairwise(run)`, its
 * pairwise summation (below 8 elements in order; up to 128, eight accumulators combined as
 * ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) then the tail; beyond, the two halves, the first cut
 * at a multiple of 8). `sum_small(x, dims, out)` runs it for a reduction of every dim or of
 * the last one only, where each output element is one such run; True when done, False to
 * make the NumPy call. tests/test_accel_small_ops.py compares it with np.add.reduce. */

#define PAIRWISE(NAME, T)                                                    \
    static T NAME(const T *a, npy_intp n)                                    \
    {                                                                        \
        if (n < 8) {                                                         \
            T res = (T)-0.0;                                                 \
            for (npy_intp i = 0; i < n; i++) {                               \
                res += a[i];                                                 \
            }                                                                \
            return res;                                                      \
        }                                                                    \
        if (n <= 128) {                                                      \
            T r[8];                                                          \
            npy_intp i;                                                      \
            for (i = 0; i < 8; i++) {                                        \
                r[i] = a[i];                                                 \
            }                                                                \
            for (i = 8; i < n - (n % 8); i += 8) {                           \
                for (int j = 0; j < 8; j++) {                                \
                    r[j] += a[i + j];                                        \
                }                                                            \
            }                                                                \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
            for (; i < n; i++) {                                             \
                res += a[i];                                                 \
            }                                                                \
            return res;                                                      \
        }                                                                    \
        npy_intp n2 = n / 2;                                                 \
        n2 -= n2 % 8;                                                        \
        return NAME(a, n2) + NAME(a + n2, n - n2);                           \
    }

PAIRWISE(pairwise_float, npy_float)
PAIRWISE(pairwise_double, npy_double)

static PyObject *
sum_small(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "sum_small() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *x_obj = args[0], *dims = args[1], *out_obj = args[2];
    if (!PyArray_Check(x_obj) || !PyArray_Check(out_obj) || !PyTuple_CheckExact(dims)) {
        Py_RETURN_FALSE;
    }
    PyArrayObject *x = (PyArrayObject *)x_obj, *out = (PyArrayObject *)out_obj;
    int nd = PyArray_NDIM(x), type = PyArray_TYPE(x);
    npy_intp n = PyArray_SIZE(x);
    if (nd == 0 || n == 0 || n >= SMALL_LOOP || (type != NPY_FLOAT && type != NPY_DOUBLE)
        || PyArray_TYPE(out) != type || !PyArray_IS_C_CONTIGUOUS(x)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        Py_RETURN_FALSE;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(dims);
    npy_intp run;
    if (count == nd) {
        run = n; /* every dim (the plan's dims are wrapped and distinct) */
    }
    else if (count == 1 && PyLong_CheckExact(PyTuple_GET_ITEM(dims, 0))
             && PyLong_AsLong(PyTuple_GET_ITEM(dims, 0)) == nd - 1) {
        run = PyArray_DIM(x, nd - 1);
    }
    else {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_FALSE;
    }
    npy_intp rows = n / run;
    if (PyArray_SIZE(out) != rows) {
        Py_RETURN_FALSE;
    }
    if (type == NPY_FLOAT) {
        const npy_float *a = PyArray_DATA(x);
        npy_float *o = PyArray_DATA(out);
        for (npy_intp i = 0; i < rows; i++) {
            o[i] = (npy_float)0 + pairwise_float(a + i * run, run);
        }
    }
    else {
        const npy_double *a = PyArray_DATA(x);
        npy_double *o = PyArray_DATA(out);
        for (npy_intp i = 0; i < rows; i++) {
            o[i] = 0.0 + pairwise_double(a + i * run, run);
        }
    }
    Py_RETURN_TRUE;
}

/* --- (log_)softmax's small loop (Note: the small-operator loops) ------------------------
 *
 * `softmax_small(x, dim, out, log)`: compiled.py's `softmax_rows` loop (the row's max, NaN
 * propagating; exponentials summed in float64; each value divided by the sum, or shifted by
 * max + log(sum)), the same operations in the same order and precision with the C library's
 * exp/log, for a C-contiguous float32/float64 array reduced along its last dim, at most
 * SMALL_LOOP elements. True when done, False to run the kernel's own path. */

#define SOFTMAX_ROWS(NAME, T, EXP)                                               \
    static void NAME(const T *x, T *out, npy_intp m, npy_intp n, int log)        \
    {                                                                            \
        for (npy_intp i = 0; i < m; i++) {                                       \
            const T *row = x + i * n;                                            \
            T *o = out + i * n;                                                  \
            T top = row[0];                                                      \
            for (npy_intp j = 1; j < n; j++) {                                   \
                T v = row[j];                                                    \
                if (v > top || v != v) {                                         \
                    top = v;                                                     \
                }                                                                \
            }                                                                    \
            double total = 0.0;                                                  \
            for (npy_intp j = 0; j < n; j++) {                                   \
                T e = EXP(row[j] - top);                                         \
                total += (double)e;                                              \
                if (!log) {                                                      \
                    o[j] = e;                                                    \
                }                                                                \
            }                                                                    \
            if (log) {                                                           \
                double shift = (double)top + math_log(total);                    \
                for (npy_intp j = 0; j < n; j++) {                               \
                    o[j] = (T)((double)row[j] - shift);                          \
                }                                                                \
            }                                                                    \
            else {                                                               \
                for (npy_intp j = 0; j < n; j++) {                               \
                    o[j] = (T)((double)o[j] / total);                            \
                }                                                                \
            }                                                                    \
        }                                                                        \
    }

static double math_log(double v) { return log(v); }
SOFTMAX_ROWS(softmax_rows_float, npy_float, expf)
SOFTMAX_ROWS(softmax_rows_double, npy_double, exp)

static PyObject *
softmax_small(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "softmax_small() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *x_obj = args[0], *dim = args[1], *out_obj = args[2];
    int log = PyObject_IsTrue(args[3]);
    if (log < 0) {
        return NULL;
    }
    if (!PyArray_Check(x_obj) || !PyArray_Check(out_obj) || !PyLong_CheckExact(dim)) {
        Py_RETURN_FALSE;
    }
    PyArrayObject *x = (PyArrayObject *)x_obj, *out = (PyArrayObject *)out_obj;
    int nd = PyArray_NDIM(x), type = PyArray_TYPE(x);
    npy_intp size = PyArray_SIZE(x);
    long d = PyLong_AsLong(dim);
    if (d == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (nd == 0 || d != nd - 1 || size == 0 || size >= SMALL_LOOP
        || (type != NPY_FLOAT && type != NPY_DOUBLE) || PyArray_TYPE(out) != type
        || PyArray_SIZE(out) != size || !PyArray_IS_C_CONTIGUOUS(x)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        Py_RETURN_FALSE;
    }
    char *xd = PyArray_DATA(x), *od = PyArray_DATA(out);
    npy_intp bytes = size * PyArray_ITEMSIZE(x);
    if (xd < od + bytes && od < xd + bytes) {
        Py_RETURN_FALSE; /* the output re-read as input: the kernel's own path */
    }
    npy_intp n = PyArray_DIM(x, nd - 1);
    if (type == NPY_FLOAT) {
        softmax_rows_float((const npy_float *)xd, (npy_float *)od, size / n, n, log);
    }
    else {
        softmax_rows_double((const npy_double *)xd, (npy_double *)od, size / n, n, log);
    }
    Py_RETURN_TRUE;
}

/* --- mm's product through NumPy's own matmul loop ------------------------------------
 *
 * `np.matmul(a, b, out=o)` on 4x4 float32 costs ~1.5 us, nearly all of it the ufunc's
 * argument handling, type resolution and iterator set-up around one call of its inner loop
 * (`FLOAT_matmul`: BLAS's gemm, or its own loop, as the strides allow). `matmul_small(a, b,
 * out)` calls that very loop (found once in the ufunc's table of loops for the arrays' type)
 * with the arguments the ufunc would give it for two aligned 2-d arrays and a C-contiguous
 * aligned output: the same bits by construction. True when done; False (another type, 0-size,
 * a stacked or unaligned case, a NumPy without the table) to make the NumPy call. */


typedef void (*matmul_loop)(char **, npy_intp const *, npy_intp const *, void *);

static int matmul_ready = 0;
static matmul_loop matmul_loops[4];  /* float32, float64, complex64, complex128 */
static void *matmul_data[4];
static const int matmul_types[4] = {NPY_FLOAT, NPY_DOUBLE, NPY_CFLOAT, NPY_CDOUBLE};

static int
find_matmul_loops(void)
{
    matmul_ready = 1;
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *ufunc = numpy ? PyObject_GetAttrString(numpy, "matmul") : NULL;
    Py_XDECREF(numpy);
    if (ufunc == NULL) {
        return -1;
    }
    if (strcmp(Py_TYPE(ufunc)->tp_name, "numpy.ufunc") == 0) {
        PyUFuncObject *u = (PyUFuncObject *)ufunc;
        for (int k = 0; k < 4 && u->nargs == 3 && u->functions != NULL && u->types != NULL;
             k++) {
            for (int i = 0; i < u->ntypes; i++) {
                const char *t = u->types + 3 * i;
                if (t[0] == matmul_types[k] && t[1] == matmul_types[k]
                    && t[2] == matmul_types[k]) {
                    matmul_loops[k] = (matmul_loop)u->functions[i];
                    matmul_data[k] = u->data ? u->data[i] : NULL;
                    break;
                }
            }
        }
    }
    Py_DECREF(ufunc);
    return 0;
}

static PyObject *
matmul_small(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "matmul_small() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!matmul_ready && find_matmul_loops() < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        if (!PyArray_Check(args[i])) {
            Py_RETURN_FALSE;
        }
    }
    PyArrayObject *a = (PyArrayObject *)args[0], *b = (PyArrayObject *)args[1],
                  *out = (PyArrayObject *)args[2];
    int type = PyArray_TYPE(a), k = 0;
    while (k < 4 && matmul_types[k] != type) {
        k++;
    }
    if (k == 4 || matmul_loops[k] == NULL || PyArray_TYPE(b) != type
        || PyArray_TYPE(out) != type || PyArray_NDIM(a) != 2 || PyArray_NDIM(b) != 2
        || PyArray_NDIM(out) != 2 || !PyArray_ISALIGNED(a) || !PyArray_ISALIGNED(b)
        || !PyArray_ISALIGNED(out) || !PyArray_ISNOTSWAPPED(a) || !PyArray_ISNOTSWAPPED(b)
        || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        Py_RETURN_FALSE;
    }
    npy_intp m = PyArray_DIM(a, 0), n = PyArray_DIM(a, 1), p = PyArray_DIM(b, 1);
    if (PyArray_DIM(b, 0) != n || PyArray_DIM(out, 0) != m || PyArray_DIM(out, 1) != p
        || m == 0 || n == 0 || p == 0) {
        Py_RETURN_FALSE;
    }
    char *od = PyArray_DATA(out);
    npy_intp bytes = m * p * PyArray_ITEMSIZE(out);
    for (int i = 0; i < 2; i++) {  /* a new output never overlaps; anything else: NumPy */
        PyArrayObject *x = i ? b : a;
        char *lo = PyArray_DATA(x), *hi = lo;
        for (int d = 0; d < 2; d++) {
            npy_intp extent = (PyArray_DIM(x, d) - 1) * PyArray_STRIDE(x, d);
            if (extent < 0) {
                lo += extent;
            }
            else {
                hi += extent;
            }
        }
        hi += PyArray_ITEMSIZE(x);
        if (lo < od + bytes && od < hi) {
            Py_RETURN_FALSE;
        }
    }
    char *data[3] = {PyArray_DATA(a), PyArray_DATA(b), od};
    npy_intp dimensions[4] = {1, m, n, p};
    npy_intp steps[9] = {0, 0, 0, PyArray_STRIDE(a, 0), PyArray_STRIDE(a, 1),
                         PyArray_STRIDE(b, 0), PyArray_STRIDE(b, 1), PyArray_STRIDE(out, 0),
                         PyArray_STRIDE(out, 1)};
    matmul_loops[k](data, dimensions, steps, matmul_data[k]);
    Py_RETURN_TRUE;
}

/* --- cat's fast function ---------------------------------------------------------------
 *
 * `cat(tensors, dim)`: kernels/cat.py's `_fast_cat_reference`, in C: the same checks in the
 * same order (CPU tensors of one dtype and rank, sizes agreeing off `dim`, none 0-dim or a
 * legacy empty [0], a result that is not 4-d and not empty), None where it declines. The
 * copy is a memcpy per (outer index, input) block when every input is C-contiguous (Note: the
 * small-operator loops), else the same `np.concatenate(arrays, dim, out)` call. */

static PyObject *np_concatenate = NULL;

/* Sizes tuple -> n, dims[] (0: not a tuple of non-negative ints that fit). */
static int
read_sizes(PyObject *sizes, Py_ssize_t *n, Py_ssize_t *dims)
{
    if (sizes == NULL || !PyTuple_CheckExact(sizes) || PyTuple_GET_SIZE(sizes) > MAX_DIMS) {
        return 0;
    }
    *n = PyTuple_GET_SIZE(sizes);
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *size = PyTuple_GET_ITEM(sizes, i);
        if (!PyLong_CheckExact(size)) {
            return 0;
        }
        dims[i] = PyLong_AsSsize_t(size);
        if (dims[i] < 0) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static PyObject *
cat(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "cat() takes 2 positional arguments (%zd given)", nargs);
        return NULL;
    }
    if (!core_ready()) {
        return NULL;
    }
    PyObject *tensors = args[0], *dim_obj = args[1];
    if (!PyTuple_CheckExact(tensors) && !PyList_CheckExact(tensors)) {
        DECLINE();
    }
    PyObject *fast = PySequence_Fast(tensors, "cat(): tensors");
    if (fast == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    PyObject *result = NULL, *arrays = NULL;
    Py_ssize_t ndim, sizes[MAX_DIMS], other[MAX_DIMS];
    if (count == 0 || !PyObject_TypeCheck(items[0], tensor_type)
        || SLOT(items[0], T_device) != cpu_device || !PyLong_CheckExact(dim_obj)
        || !read_sizes(SLOT(items[0], T_sizes), &ndim, sizes)) {
        goto decline;
    }
    int overflow;
    long long dim = PyLong_AsLongLongAndOverflow(dim_obj, &overflow);
    if (ndim == 0 || (ndim == 1 && sizes[0] == 0) || overflow || dim < -ndim || dim >= ndim) {
        goto decline;
    }
    Py_ssize_t d = (Py_ssize_t)(dim < 0 ? dim + ndim : dim);
    PyObject *dtype = SLOT(items[0], T_dtype);
    Py_ssize_t total = sizes[d];
    for (Py_ssize_t i = 1; i < count; i++) {
        PyObject *t = items[i];
        Py_ssize_t n;
        if (!PyObject_TypeCheck(t, tensor_type) || SLOT(t, T_dtype) != dtype
            || SLOT(t, T_device) != cpu_device || !read_sizes(SLOT(t, T_sizes), &n, other)
            || n != ndim) {
            goto decline;
        }
        for (Py_ssize_t k = 0; k < ndim; k++) {
            if (k != d && other[k] != sizes[k]) {
                goto decline;
            }
        }
        total += other[d];
    }
    if (ndim == 4) {
        goto decline; /* the layout rule (channels-last) is the general path's */
    }
    Py_ssize_t outer = 1, inner = 1;
    for (Py_ssize_t k = 0; k < ndim; k++) {
        Py_ssize_t size = k == d ? total : sizes[k];
        if (size == 0) {
            goto decline;
        }
        if (k < d) {
            outer *= size;
        }
        else if (k > d) {
            inner *= size;
        }
    }
    PyObject *out_sizes = PyTuple_New(ndim);
    if (out_sizes == NULL) {
        goto error;
    }
    for (Py_ssize_t k = 0; k < ndim; k++) {
        PyObject *size = k == d ? PyLong_FromSsize_t(total)
                                : Py_NewRef(PyTuple_GET_ITEM(SLOT(items[0], T_sizes), k));
        if (size == NULL) {
            Py_DECREF(out_sizes);
            goto error;
        }
        PyTuple_SET_ITEM(out_sizes, k, size);
    }
    result = make_row_major(out_sizes, dtype, cpu_device);
    Py_DECREF(out_sizes);
    if (result == NULL) {
        goto error;
    }
    arrays = PyList_New(count);
    if (arrays == NULL) {
        goto error;
    }
    int contiguous = 1;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *x = array_of(items[i]);
        if (x == NULL) {
            goto error;
        }
        PyList_SET_ITEM(arrays, i, x);
        contiguous = contiguous && PyArray_Check(x)
                     && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)x);
    }
    PyObject *out_np = SLOT(result, T_np);
    if (out_np == NULL || !PyArray_Check(out_np)) {
        Py_DECREF(arrays);
        Py_CLEAR(result);
        goto decline; /* a result without a NumPy view (another allocator): the general path */
    }
    if (contiguous && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)out_np)) {
        npy_intp itemsize = PyArray_ITEMSIZE((PyArrayObject *)out_np);
        for (Py_ssize_t i = 0; i < count && contiguous; i++) {
            contiguous = PyArray_ITEMSIZE((PyArrayObject *)PyList_GET_ITEM(arrays, i))
                         == itemsize;
        }
        if (contiguous) {
            char *target = PyArray_DATA((PyArrayObject *)out_np);
            for (Py_ssize_t o = 0; o < outer; o++) {
                for (Py_ssize_t i = 0; i < count; i++) {
                    PyArrayObject *x = (PyArrayObject *)PyList_GET_ITEM(arrays, i);
                    Py_ssize_t block = PyArray_DIM(x, (int)d) * inner * itemsize;
                    memcpy(target, (char *)PyArray_DATA(x) + o * block, block);
                    target += block;
                }
            }
            Py_DECREF(arrays);
            Py_DECREF(fast);
            return result;
        }
    }
    if (np_concatenate == NULL) {
        PyObject *numpy = PyImport_ImportModule("numpy");
        np_concatenate = numpy ? PyObject_GetAttrString(numpy, "concatenate") : NULL;
        Py_XDECREF(numpy);
        if (np_concatenate == NULL) {
            goto error;
        }
    }
    PyObject *call[3] = {arrays, dim_obj, out_np};
    PyObject *done = PyObject_Vectorcall(np_concatenate, call, 3, NULL);
    if (done == NULL) {
        goto error;
    }
    Py_DECREF(done);
    Py_DECREF(arrays);
    Py_DECREF(fast);
    return result;

decline:
    Py_DECREF(fast);
    Py_RETURN_NONE;
error:
    Py_XDECREF(arrays);
    Py_XDECREF(result);
    Py_DECREF(fast);
    return NULL;
}

/* cat_function() -> cat's fast function (a FastFunction, named as a kernel may be). */
static PyObject *
cat_function(PyObject *module, PyObject *unused)
{
    PyObject *name = PyUnicode_FromString("cat");
    if (name == NULL) {
        return NULL;
    }
    PyObject *f = new_fast(CAT, 0, LOOP_NONE, Py_None, Py_None, Py_None, Py_None, Py_None,
                           Py_None, Py_None, name);
    Py_DECREF(name);
    return f;
}

/* --- the recording path: Note: the accelerated recording path (pyaten/autograd/graph.py) --
 *
 * `call_below_autograd` (dispatch/tls.py) for the default thread-local sets, the `Node` and
 * `AccumulateGrad` constructors' `__init__` and `grad_accumulator`. Each does what its Python
 * reference does, in the same order; every case it does not take (a thread inside a guard,
 * an argument that is not a Tensor, a slot not set) goes to the reference. */

static PyObject *tls_state = NULL, *tls_nondefault = NULL, *tls_default_included = NULL,
    *tls_default_excluded = NULL, *tls_excluded_below = NULL, *tls_keep_below = NULL,
    *tls_default_keep = NULL, *py_call_below_reference = NULL;
static PyObject *s_included, *s_excluded, *s_keep, *s_dict;

static PyObject *
setup_tls(PyObject *module, PyObject *args)
{
    PyObject *state, *nondefault, *included, *excluded, *excluded_below, *keep_below, *keep,
        *reference;
    if (!PyArg_ParseTuple(args, "OO!OOOOOO:setup_tls", &state, &PyList_Type, &nondefault,
                          &included, &excluded, &excluded_below, &keep_below, &keep,
                          &reference)) {
        return NULL;
    }
    Py_INCREF(state);
    Py_XSETREF(tls_state, state);
    Py_INCREF(nondefault);
    Py_XSETREF(tls_nondefault, nondefault);
    Py_INCREF(included);
    Py_XSETREF(tls_default_included, included);
    Py_INCREF(excluded);
    Py_XSETREF(tls_default_excluded, excluded);
    Py_INCREF(excluded_below);
    Py_XSETREF(tls_excluded_below, excluded_below);
    Py_INCREF(keep_below);
    Py_XSETREF(tls_keep_below, keep_below);
    Py_INCREF(keep);
    Py_XSETREF(tls_default_keep, keep);
    Py_INCREF(reference);
    Py_XSETREF(py_call_below_reference, reference);
    Py_RETURN_NONE;
}

/* 1 where this thread's `name` set is `expected` (by value), 0 where not, -1 on error.
 * `values` is the thread's own dict of the threading.local (a set never stored on this
 * thread is read as the class default, through the attribute). */
static int
tls_is(PyObject *values, PyObject *name, PyObject *expected)
{
    PyObject *value = PyDict_GetItemWithError(values, name);
    if (value != NULL) {
        return value == expected ? 1 : PyObject_RichCompareBool(value, expected, Py_EQ);
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    /* never stored on this thread: the class default (plain ints, no descriptors), read from
     * the class (the threading.local's own lookup costs several times more) */
    value = PyObject_GetAttr((PyObject *)Py_TYPE(tls_state), name);
    if (value == NULL) {
        return -1;
    }
    int same = value == expected ? 1 : PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return same;
}

/* `NONDEFAULT.pop()` (its items are all None): 0, or -1 when it is empty */
static int
nondefault_pop(void)
{
    Py_ssize_t n = PyList_GET_SIZE(tls_nondefault);
    if (n < 1) {
        return -1;
    }
    PyObject *last = PyList_GET_ITEM(tls_nondefault, n - 1);
    Py_SET_SIZE(tls_nondefault, n - 1);  /* (the list keeps its allocation, as pop does) */
    Py_DECREF(last);
    return 0;
}

static PyObject *
call_below_autograd(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (tls_state == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.call_below_autograd: setup_tls not run");
        return NULL;
    }
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError,
                        "call_below_autograd() missing 1 required positional argument: 'fn'");
        return NULL;
    }
    /* The threading.local's per-thread dict: storing in it is what setting the attribute
     * does (the class defaults are plain ints, no descriptors), at a fraction of the cost. */
    PyObject *values = PyObject_GetAttr(tls_state, s_dict);
    if (values == NULL) {
        return NULL;
    }
    if (!PyDict_Check(values)) {
        Py_DECREF(values);
        return PyObject_Vectorcall(py_call_below_reference, args, nargs, NULL);
    }
    int plain = tls_is(values, s_excluded, tls_default_excluded);
    if (plain > 0) {
        plain = tls_is(values, s_included, tls_default_included);
    }
    if (plain <= 0) {  /* inside a guard (or already below autograd): the reference */
        Py_DECREF(values);
        return plain < 0 ? NULL
                         : PyObject_Vectorcall(py_call_below_reference, args, nargs, NULL);
    }
    if (PyList_Append(tls_nondefault, Py_None) < 0) {
        Py_DECREF(values);
        return NULL;
    }
    PyObject *result = NULL;
    if (PyDict_SetItem(values, s_excluded, tls_excluded_below) == 0
        && PyDict_SetItem(values, s_keep, tls_keep_below) == 0) {
        result = PyObject_Vectorcall(args[0], args + 1, nargs - 1, NULL);
    }
    /* the `finally` of the reference: restore, keeping the call's exception if any */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    int failed = PyDict_SetItem(values, s_excluded, tls_default_excluded) < 0;
    failed = failed || PyDict_SetItem(values, s_keep, tls_default_keep) < 0;
    Py_DECREF(values);
    Py_ssize_t n = PyList_GET_SIZE(tls_nondefault);
    failed = failed || (n > 0 && nondefault_pop() < 0);
    if (failed) {
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return NULL;
    }
    PyErr_Restore(type, value, traceback);
    return result;
}

static PyTypeObject *node_type = NULL, *accumulate_type = NULL;
static PyObject *node_sequence = NULL;          /* graph._SEQUENCE, an itertools.count */
static PyObject *py_accumulate_init = NULL;     /* AccumulateGrad.__init__'s reference */
static PyObject *py_grad_accumulator = NULL;    /* grad_accumulator's reference */
static Py_ssize_t N_next, N_meta, N_sequence, N_pre_hooks, N_hooks, N_tensor_pre_hooks,
    N_retains_grad, N_metadata, N_released, N_counts, A_variable;

static inline void
set_slot_new(PyObject *obj, Py_ssize_t offset, PyObject *value)  /* steals `value` */
{
    PyObject **where = (PyObject **)((char *)obj + offset);
    PyObject *old = *where;
    *where = value;
    Py_XDECREF(old);
}

/* Node.__init__'s stores: `meta` (stolen) is the new input_meta */
static int
node_fill(PyObject *self, PyObject *meta)
{
    PyObject *number = PyIter_Next(node_sequence);
    if (number == NULL) {
        Py_DECREF(meta);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "the node sequence ended");
        }
        return -1;
    }
    set_slot(self, N_next, empty_tuple);
    set_slot_new(self, N_meta, meta);
    set_slot_new(self, N_sequence, number);
    set_slot(self, N_pre_hooks, Py_None);
    set_slot(self, N_hooks, Py_None);
    set_slot(self, N_tensor_pre_hooks, Py_None);
    set_slot(self, N_retains_grad, Py_None);
    set_slot(self, N_metadata, Py_None);
    set_slot(self, N_counts, Py_None);
    set_slot(self, N_released, Py_False);
    return 0;
}

static PyObject *
node_init(PyObject *self, PyObject *unused)
{
    PyObject *meta = PyList_New(0);
    if (meta == NULL || node_fill(self, meta) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static inline int
is_tensor_with(PyObject *t, Py_ssize_t offset)
{
    return tensor_type != NULL && PyObject_TypeCheck(t, tensor_type) && SLOT(t, offset) != NULL;
}

/* AccumulateGrad.__init__'s stores, for a Tensor whose slots are set */
static int
accumulate_fill(PyObject *self, PyObject *variable)
{
    PyObject *sizes = SLOT(variable, T_sizes), *dtype = SLOT(variable, T_dtype),
        *device = SLOT(variable, T_device);
    PyObject *entry = PyTuple_Pack(3, sizes, dtype, device);
    if (entry == NULL) {
        return -1;
    }
    PyObject *meta = PyList_New(1);
    if (meta == NULL) {
        Py_DECREF(entry);
        return -1;
    }
    PyList_SET_ITEM(meta, 0, entry);
    if (node_fill(self, meta) < 0) {
        return -1;
    }
    set_slot(self, A_variable, variable);
    return 0;
}

static inline int
tensor_meta_set(PyObject *t)
{
    return is_tensor_with(t, T_sizes) && SLOT(t, T_dtype) != NULL && SLOT(t, T_device) != NULL;
}

static PyObject *
accumulate_init(PyObject *self, PyObject *variable)
{
    if (!tensor_meta_set(variable)) {
        return PyObject_CallFunctionObjArgs(py_accumulate_init, self, variable, NULL);
    }
    if (accumulate_fill(self, variable) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
grad_accumulator(PyObject *module, PyObject *t)
{
    if (accumulate_type == NULL || !is_tensor_with(t, T_grad_acc) || !tensor_meta_set(t)) {
        return PyObject_CallOneArg(py_grad_accumulator, t);
    }
    PyObject *ref = SLOT(t, T_grad_acc);
    if (ref != Py_None) {
        if (!PyWeakref_CheckRef(ref)) {
            return PyObject_CallOneArg(py_grad_accumulator, t);
        }
        PyObject *node = PyWeakref_GET_OBJECT(ref);
        if (node != Py_None) {
            Py_INCREF(node);
            return node;
        }
    }
    PyObject *node = accumulate_type->tp_alloc(accumulate_type, 0);
    if (node == NULL) {
        return NULL;
    }
    if (accumulate_fill(node, t) < 0) {
        Py_DECREF(node);
        return NULL;
    }
    PyObject *weak = PyWeakref_NewRef(node, NULL);
    if (weak == NULL) {
        Py_DECREF(node);
        return NULL;
    }
    set_slot_new(t, T_grad_acc, weak);
    return node;
}

static PyMethodDef node_init_def = {
    "__init__", node_init, METH_NOARGS, "Node.__init__ (compiled; graph.node_init_reference)."};
static PyMethodDef accumulate_init_def = {
    "__init__", accumulate_init, METH_O,
    "AccumulateGrad.__init__(variable) (compiled; graph.accumulate_grad_init_reference)."};

static PyObject *
setup_graph(PyObject *module, PyObject *args)
{
    PyObject *node, *accumulate, *sequence, *accumulate_reference, *accumulator_reference;
    if (!PyArg_ParseTuple(args, "O!O!OOO:setup_graph", &PyType_Type, &node, &PyType_Type,
                          &accumulate, &sequence, &accumulate_reference,
                          &accumulator_reference)) {
        return NULL;
    }
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.setup_graph: setup_core not run");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)accumulate, (PyTypeObject *)node)
        || !PyIter_Check(sequence)) {
        PyErr_SetString(PyExc_TypeError, "_accel.setup_graph(Node, AccumulateGrad, count, "
                                         "init_reference, grad_accumulator_reference)");
        return NULL;
    }
    PyTypeObject *n = (PyTypeObject *)node, *a = (PyTypeObject *)accumulate;
    if (slot_offset(n, "next_functions", &N_next) || slot_offset(n, "input_meta", &N_meta)
        || slot_offset(n, "_sequence_nr", &N_sequence)
        || slot_offset(n, "_pre_hooks", &N_pre_hooks) || slot_offset(n, "_hooks", &N_hooks)
        || slot_offset(n, "_tensor_pre_hooks", &N_tensor_pre_hooks)
        || slot_offset(n, "_retains_grad", &N_retains_grad)
        || slot_offset(n, "_metadata", &N_metadata) || slot_offset(n, "_released", &N_released)
        || slot_offset(n, "_counts", &N_counts) || slot_offset(a, "variable", &A_variable)) {
        return NULL;
    }
    PyObject *init = PyDescr_NewMethod(n, &node_init_def);
    if (init == NULL) {
        return NULL;
    }
    PyObject *accumulate_init_descr = PyDescr_NewMethod(a, &accumulate_init_def);
    if (accumulate_init_descr == NULL) {
        Py_DECREF(init);
        return NULL;
    }
    Py_INCREF(node);
    Py_XSETREF(node_type, n);
    Py_INCREF(accumulate);
    Py_XSETREF(accumulate_type, a);
    Py_INCREF(sequence);
    Py_XSETREF(node_sequence, sequence);
    Py_INCREF(accumulate_reference);
    Py_XSETREF(py_accumulate_init, accumulate_reference);
    Py_INCREF(accumulator_reference);
    Py_XSETREF(py_grad_accumulator, accumulator_reference);
    return Py_BuildValue("(NN)", init, accumulate_init_descr);
}

/* SavedTensor.__init__ and TensorGeometry.__init__ (graph.py): the same stores; a tensor
 * that is not an exact, fully set Tensor, keywords, or Python dispatch on go to the
 * references. */
static PyObject *saved_type = NULL, *geometry_type = NULL;
static PyObject *py_saved_init = NULL, *py_geometry_init = NULL, *py_alias = NULL;
static PyObject *python_keys = NULL;            /* graph's PYTHON_KEYS, an int */
static Py_ssize_t V_data, V_version, V_is_output, V_output_nr, G_sizes, G_dtype, G_device,
    G_strides, G_offset;

static int
tensor_slots_set(PyObject *t)
{
    if (tensor_type == NULL || !PyObject_TypeCheck(t, tensor_type)) {
        return 0;
    }
    Py_ssize_t offsets[] = {T_storage, T_sizes, T_strides, T_offset, T_dtype, T_device,
                            T_keyset, T_vc, T_base, T_grad_fn, T_output_nr};
    for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
        if (SLOT(t, offsets[i]) == NULL) {
            return 0;
        }
    }
    return 1;
}

/* `_alias_without_history(t)` for an exact Tensor without Python dispatch; NULL with no
 * error set where the reference must run */
static PyObject *
alias_without_history(PyObject *t)
{
    if (Py_TYPE(t) != tensor_type || PyList_GET_SIZE(tls_nondefault) != 0) {
        return NULL;  /* a subclass, or a thread with non-default sets: the reference */
    }
    PyObject *keyset = SLOT(t, T_keyset);
    PyObject *python = PyNumber_And(keyset, python_keys);
    if (python == NULL) {
        return NULL;
    }
    int on = PyObject_IsTrue(python);
    Py_DECREF(python);
    if (on != 0) {
        return NULL;  /* Python dispatch (or an error): the reference, which redoes the check */
    }
    PyObject *storage = SLOT(t, T_storage), *strides = SLOT(t, T_strides);
    Py_INCREF(storage);
    Py_INCREF(strides);
    PyObject *alias = new_tensor(storage, SLOT(t, T_sizes), strides, SLOT(t, T_offset),
                                 SLOT(t, T_dtype), SLOT(t, T_device), keyset);
    if (alias == NULL) {
        return NULL;
    }
    set_slot(alias, T_vc, SLOT(t, T_vc));
    set_slot(alias, T_base, SLOT(t, T_base));
    return alias;
}

static PyObject *
saved_init(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 1 || nargs > 2 || !tensor_slots_set(args[0])
        || tls_nondefault == NULL) {
        PyObject *call = PyTuple_New(nargs + 1);
        if (call == NULL) {
            return NULL;
        }
        Py_INCREF(self);
        PyTuple_SET_ITEM(call, 0, self);
        for (Py_ssize_t i = 0; i < nargs; i++) {
            Py_INCREF(args[i]);
            PyTuple_SET_ITEM(call, i + 1, args[i]);
        }
        PyObject *kwargs = NULL;
        if (kwnames != NULL) {
            kwargs = PyDict_New();
            for (Py_ssize_t i = 0; kwargs != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
                if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                    Py_CLEAR(kwargs);
                }
            }
            if (kwargs == NULL) {
                Py_DECREF(call);
                return NULL;
            }
        }
        PyObject *result = PyObject_Call(py_saved_init, call, kwargs);
        Py_DECREF(call);
        Py_XDECREF(kwargs);
        return result;
    }
    PyObject *t = args[0];
    PyObject *is_output = nargs > 1 ? args[1] : Py_False;
    /* self._version = t._version_counter.value (the counter made when first asked for) */
    PyObject *counter = SLOT(t, T_vc);
    if (counter == Py_None) {
        counter = PyObject_CallNoArgs(version_counter_type);
        if (counter == NULL) {
            return NULL;
        }
        set_slot_new(t, T_vc, counter);
    }
    PyObject *version = PyObject_GetAttr(counter, s_value);
    if (version == NULL) {
        return NULL;
    }
    set_slot_new(self, V_version, version);
    int output = PyObject_IsTrue(is_output);
    if (output < 0) {
        return NULL;
    }
    /* `is_output and t.grad_fn is not None` */
    PyObject *kept = output ? (SLOT(t, T_grad_fn) != Py_None ? Py_True : Py_False) : is_output;
    set_slot(self, V_is_output, kept);
    set_slot(self, V_output_nr, SLOT(t, T_output_nr));
    if (!output) {
        set_slot(self, V_data, t);
        Py_RETURN_NONE;
    }
    PyObject *alias = kept == Py_True ? alias_without_history(t) : NULL;
    if (alias == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        alias = PyObject_CallFunctionObjArgs(py_alias, t, kept, NULL);
        if (alias == NULL) {
            return NULL;
        }
    }
    set_slot_new(self, V_data, alias);
    Py_RETURN_NONE;
}

static PyObject *
geometry_init(PyObject *self, PyObject *t)
{
    if (!tensor_slots_set(t)) {
        return PyObject_CallFunctionObjArgs(py_geometry_init, self, t, NULL);
    }
    set_slot(self, G_sizes, SLOT(t, T_sizes));
    set_slot(self, G_dtype, SLOT(t, T_dtype));
    set_slot(self, G_device, SLOT(t, T_device));
    set_slot(self, G_strides, SLOT(t, T_strides));
    set_slot(self, G_offset, SLOT(t, T_offset));
    Py_RETURN_NONE;
}

static PyMethodDef saved_init_def = {
    "__init__", (PyCFunction)(void (*)(void))saved_init, METH_FASTCALL | METH_KEYWORDS,
    "SavedTensor.__init__(t, is_output=False) (compiled; graph.saved_tensor_init_reference)."};
static PyMethodDef geometry_init_def = {
    "__init__", geometry_init, METH_O,
    "TensorGeometry.__init__(t) (compiled; graph.tensor_geometry_init_reference)."};

static PyObject *
setup_saved(PyObject *module, PyObject *args)
{
    PyObject *saved, *geometry, *keys, *saved_reference, *geometry_reference, *alias;
    if (!PyArg_ParseTuple(args, "O!O!O!OOO:setup_saved", &PyType_Type, &saved, &PyType_Type,
                          &geometry, &PyLong_Type, &keys, &saved_reference,
                          &geometry_reference, &alias)) {
        return NULL;
    }
    if (tensor_type == NULL || tls_nondefault == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.setup_saved: setup_core/setup_tls not run");
        return NULL;
    }
    PyTypeObject *v = (PyTypeObject *)saved, *g = (PyTypeObject *)geometry;
    if (slot_offset(v, "_data", &V_data) || slot_offset(v, "_version", &V_version)
        || slot_offset(v, "_is_output", &V_is_output)
        || slot_offset(v, "_output_nr", &V_output_nr) || slot_offset(g, "_sizes", &G_sizes)
        || slot_offset(g, "dtype", &G_dtype) || slot_offset(g, "device", &G_device)
        || slot_offset(g, "_strides", &G_strides) || slot_offset(g, "_offset", &G_offset)) {
        return NULL;
    }
    PyObject *init = PyDescr_NewMethod(v, &saved_init_def);
    if (init == NULL) {
        return NULL;
    }
    PyObject *geometry_init_descr = PyDescr_NewMethod(g, &geometry_init_def);
    if (geometry_init_descr == NULL) {
        Py_DECREF(init);
        return NULL;
    }
    Py_INCREF(saved);
    Py_XSETREF(saved_type, saved);
    Py_INCREF(geometry);
    Py_XSETREF(geometry_type, geometry);
    Py_INCREF(keys);
    Py_XSETREF(python_keys, keys);
    Py_INCREF(saved_reference);
    Py_XSETREF(py_saved_init, saved_reference);
    Py_INCREF(geometry_reference);
    Py_XSETREF(py_geometry_init, geometry_reference);
    Py_INCREF(alias);
    Py_XSETREF(py_alias, alias);
    return Py_BuildValue("(NN)", init, geometry_init_descr);
}

/* --- vmap's wrapper and binding route: Note: the binding route (pyaten/func/_key.py) ------
 *
 * `make_batched(value, level)` is func/_batched.py's `_make_batched` (its Python function,
 * `make_batched_reference`, is the reference). `vmap_route(entry, values)` is _key.py's
 * `binding_route` (`binding_route_reference`) with each operator's fast case run here, as
 * `_route_plan(entry)` describes it: the same checks, the same call on the values (the
 * direct call where `call_plain` takes it, else the operator), the same wrapper. It answers
 * NotImplemented exactly where the reference does; a case it cannot read in C (an entry
 * without a plan yet, a kernel not checked yet) goes to the Python helpers first. */

#define ROUTE_MAX_ARGS 8
enum { ROUTE_NONE = 0, ROUTE_LINEAR = 1, ROUTE_POINTWISE = 2, ROUTE_POINTWISE_PAIR = 3 };

static PyTypeObject *batched_type = NULL;
static PyObject *vm_included = NULL;        /* a vmapped function's sets: defaults | mode bit */
static PyObject *vm_batched_keys = NULL;    /* _batched.BATCHED_KEYS */
static PyObject *vm_cpu_keys = NULL;        /* a CPU wrapper's key set */
static PyObject *vm_plain_cpu = NULL;       /* gen_support.PLAIN_CPU */
static PyObject *vm_plain_key = NULL;       /* gen_support.PLAIN_KEY */
static PyObject *vm_trace_globals = NULL;   /* pyaten.dispatch.trace's module dict */
static PyObject *vm_general = NULL;         /* _key.general_path_only */
static PyObject *vm_route_off = NULL;       /* _key.binding_route_off */
static PyObject *vc_stack = NULL;           /* _batched._STACK */
static PyObject *vm_grad = NULL;            /* grad_mode.GRAD */
static PyObject *vm_plan = NULL;            /* _key._route_plan */
static PyObject *vm_kernel_ok = NULL;       /* _key._route_kernel_ok */
static PyObject *vm_set = NULL;             /* tls._set */
static PyObject *vm_make_reference = NULL;  /* _batched.make_batched_reference */
static PyObject *vm_key_in = NULL, *vm_key_out = NULL;  /* the last cache key computed */
static Py_ssize_t B_value, B_level;         /* BatchedTensor's slots */
static PyTypeObject *direct_type = NULL;    /* gen_support.Direct */
static Py_ssize_t D_checked, D_fast;        /* its slots */
static PyObject *s_ACTIVE, *s_on, *s_levels, *s_enabled, *s_level, *s_vmap_c, *s_cache,
    *s_vmap_route, *s_checked, *s_fast, *s_check, *s_itemsize;

/* setup_batched(BatchedTensor, BATCHED_KEYS, make_batched_reference): func/_batched.py's */
static PyObject *
setup_batched(PyObject *module, PyObject *args)
{
    PyObject *batched, *batched_keys, *make_reference;
    if (!PyArg_ParseTuple(args, "O!OO:setup_batched", &PyType_Type, &batched, &batched_keys,
                          &make_reference)) {
        return NULL;
    }
    if (tensor_type == NULL || cpu_device == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.setup_batched: setup_core not run");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)batched, tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "setup_batched(): the wrapper must be a Tensor subclass");
        return NULL;
    }
    if (slot_offset((PyTypeObject *)batched, "value", &B_value)
        || slot_offset((PyTypeObject *)batched, "level", &B_level)) {
        return NULL;
    }
    PyObject *cpu_keys = PyNumber_Or(cpu_keyset, batched_keys);
    if (cpu_keys == NULL) {
        return NULL;
    }
    Py_XSETREF(vm_cpu_keys, cpu_keys);
    Py_INCREF(batched);
    Py_XSETREF(batched_type, (PyTypeObject *)batched);
    Py_INCREF(batched_keys);
    Py_XSETREF(vm_batched_keys, batched_keys);
    Py_INCREF(make_reference);
    Py_XSETREF(vm_make_reference, make_reference);
    Py_RETURN_NONE;
}

/* setup_route(vmap_included, PLAIN_CPU, PLAIN_KEY, trace_globals, general_path_only,
 * binding_route_off, STACK, GRAD, route_plan, route_kernel_ok, tls_set): func/_key.py's */
static PyObject *
setup_route(PyObject *module, PyObject *args)
{
    PyObject *included, *plain_cpu, *plain_key, *trace_globals, *general, *route_off, *stack,
        *grad, *plan, *kernel_ok, *set, *direct;
    if (!PyArg_ParseTuple(args, "OOOO!OOOOOOOO!:setup_route", &included, &plain_cpu,
                          &plain_key, &PyDict_Type, &trace_globals, &general, &route_off,
                          &stack, &grad, &plan, &kernel_ok, &set, &PyType_Type, &direct)) {
        return NULL;
    }
    if (slot_offset((PyTypeObject *)direct, "checked", &D_checked)
        || slot_offset((PyTypeObject *)direct, "fast", &D_fast)) {
        return NULL;
    }
    Py_INCREF(direct);
    Py_XSETREF(direct_type, (PyTypeObject *)direct);
    if (batched_type == NULL || tls_state == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.setup_route: setup_batched/setup_tls not run");
        return NULL;
    }
    PyObject **fields[] = {&vm_included, &vm_plain_cpu, &vm_plain_key, &vm_trace_globals,
                           &vm_general, &vm_route_off, &vc_stack, &vm_grad, &vm_plan,
                           &vm_kernel_ok, &vm_set};
    PyObject *given[] = {included, plain_cpu, plain_key, trace_globals, general, route_off,
                         stack, grad, plan, kernel_ok, set};
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
        Py_INCREF(given[i]);
        Py_XSETREF(*fields[i], given[i]);
    }
    Py_CLEAR(vm_key_in);
    Py_CLEAR(vm_key_out);
    Py_RETURN_NONE;
}

/* `_make_batched(value, level)`: the wrapper of one sample's geometry over `value`'s batch
 * (dimension 0), its data living in `value`. */
static PyObject *
make_batched_of(PyObject *value, PyObject *level)
{
    PyObject *sizes = PyObject_TypeCheck(value, tensor_type) ? SLOT(value, T_sizes) : NULL;
    PyObject *strides = sizes != NULL ? SLOT(value, T_strides) : NULL;
    if (sizes == NULL || strides == NULL || !PyTuple_CheckExact(sizes)
        || !PyTuple_CheckExact(strides) || PyTuple_GET_SIZE(sizes) < 1
        || PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(sizes)) {
        return PyObject_CallFunctionObjArgs(vm_make_reference, value, level, NULL);
    }
    Py_ssize_t n = PyTuple_GET_SIZE(sizes), extent = 1;
    int empty = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        PyObject *size_obj = PyTuple_GET_ITEM(sizes, i), *stride_obj = PyTuple_GET_ITEM(strides, i);
        if (!PyLong_CheckExact(size_obj) || !PyLong_CheckExact(stride_obj)) {
            /* a symbolic size: the reference */
            return PyObject_CallFunctionObjArgs(vm_make_reference, value, level, NULL);
        }
        Py_ssize_t size = PyLong_AsSsize_t(size_obj), stride = PyLong_AsSsize_t(stride_obj);
        if ((size == -1 || stride == -1) && PyErr_Occurred()) {
            return NULL;
        }
        if (size == 0) {
            empty = 1;
        }
        extent += (size - 1) * stride;
    }
    PyObject *dtype = SLOT(value, T_dtype), *device = SLOT(value, T_device);
    PyObject *item = PyObject_GetAttr(dtype, s_itemsize);
    if (item == NULL) {
        return NULL;
    }
    Py_ssize_t itemsize = PyLong_AsSsize_t(item);
    Py_DECREF(item);
    if (itemsize == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *keys;
    if (device == cpu_device) {
        keys = vm_cpu_keys;
        Py_INCREF(keys);
    } else {
        PyObject *device_keys = PyObject_GetAttr(device, s_keyset);
        if (device_keys == NULL) {
            return NULL;
        }
        keys = PyNumber_Or(device_keys, vm_batched_keys);
        Py_DECREF(device_keys);
        if (keys == NULL) {
            return NULL;
        }
    }
    PyObject *nbytes = PyLong_FromSsize_t(empty ? 0 : extent * itemsize);
    PyObject *sample_sizes = PyTuple_GetSlice(sizes, 1, n);
    PyObject *sample_strides = PyTuple_GetSlice(strides, 1, n);
    PyObject *storage = nbytes != NULL ? dataless_storage(nbytes, device) : NULL;
    Py_XDECREF(nbytes);
    if (sample_sizes == NULL || sample_strides == NULL || storage == NULL) {
        Py_XDECREF(sample_sizes);
        Py_XDECREF(sample_strides);
        Py_XDECREF(storage);
        Py_DECREF(keys);
        return NULL;
    }
    PyObject *t = new_tensor_of(batched_type, storage, sample_sizes, sample_strides, zero, dtype,
                                device, keys);
    Py_DECREF(sample_sizes);
    Py_DECREF(keys);
    if (t == NULL) {
        return NULL;
    }
    set_slot(t, B_value, value);
    set_slot(t, B_level, level);
    return t;
}

static PyObject *
make_batched(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "make_batched() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (batched_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.make_batched: setup_batched not run");
        return NULL;
    }
    return make_batched_of(args[0], args[1]);
}

/* The thread's value of the threading.local attribute `name` (`values` its dict for this
 * thread), or the class default; a new reference. (Every attribute read so is a plain value
 * on the class: no descriptors.) */
static PyObject *
tls_get(PyObject *local, PyObject *values, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(values, name);
    if (value != NULL) {
        Py_INCREF(value);
        return value;
    }
    /* never stored on this thread: the class default (a plain value), read from the class */
    return PyErr_Occurred() ? NULL : PyObject_GetAttr((PyObject *)Py_TYPE(local), name);
}

static int
same_value(PyObject *a, PyObject *b)
{
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* 1 where `t` is a plain CPU tensor that needs no grad here (`grad`: grad mode's flag, or 1
 * for `call_plain`'s test, which ignores grad mode), 0 where not, -1 on error. */
static int
plain_tensor(PyObject *t, int grad)
{
    if (Py_TYPE(t) != tensor_type || SLOT(t, T_fw_grad) != Py_None) {
        return 0;
    }
    int same = same_value(SLOT(t, T_keyset), vm_plain_cpu);
    if (same <= 0) {
        return same;
    }
    if (!grad) {
        return 1;
    }
    int requires = is_true_slot(t, T_requires_grad);
    return requires < 0 ? -1 : !requires;
}

/* `call_plain(func, call)` (func/_rules.py) with the plan's func, Direct and entry. */
static PyObject *
route_call(PyObject *plan, PyObject **call, Py_ssize_t count)
{
    PyObject *func = PyTuple_GET_ITEM(plan, 1), *direct = PyTuple_GET_ITEM(plan, 2),
             *func_entry = PyTuple_GET_ITEM(plan, 3);
    Py_ssize_t wanted = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 4));
    if (wanted == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int plain = PyList_GET_SIZE(tls_nondefault) == 0 && count == wanted;
    for (Py_ssize_t i = 0; plain > 0 && i < count; i++) {
        plain = plain_tensor(call[i], 1);
    }
    if (plain < 0) {
        return NULL;
    }
    if (plain) {
        PyObject *kernel = PyDict_GetItemWithError(PyTuple_GET_ITEM(plan, 6), vm_plain_key);
        if (kernel == NULL && PyErr_Occurred()) {
            return NULL;
        }
        PyObject *checked = Py_TYPE(direct) == direct_type ? SLOT(direct, D_checked) : NULL;
        PyObject *fast = checked != NULL ? SLOT(direct, D_fast) : NULL;
        if (checked != NULL && fast != NULL && (kernel != NULL ? kernel : Py_None) == checked) {
            Py_INCREF(fast);
        } else {
            fast = PyObject_CallMethodOneArg(direct, s_check, func_entry);
            if (fast == NULL) {
                return NULL;
            }
        }
        if (fast != Py_None) {
            PyObject *result = PyObject_Vectorcall(fast, call, count, NULL);
            Py_DECREF(fast);
            if (result != Py_None) {
                return result;  /* the result, or NULL: the kernel's error */
            }
            Py_DECREF(result);
        } else {
            Py_DECREF(fast);
        }
    }
    return PyObject_Vectorcall(func, call, count, NULL);
}

/* This thread's dicts of the threading.locals vmap reads (the key sets, grad mode, the level
 * stack), borrowed: fetched once per thread (a threading.local keeps one dict per thread for
 * its life), by the thread's unique id. */
static unsigned long long td_thread = 0;
static PyObject *td_state = NULL, *td_grad = NULL, *td_stack = NULL;

static int
thread_dicts(void)
{
    unsigned long long id = PyThreadState_GetID(PyThreadState_Get());
    if (id == td_thread && td_state != NULL) {
        return 0;
    }
    PyObject *locals[3] = {tls_state, vm_grad, vc_stack};
    PyObject **dicts[3] = {&td_state, &td_grad, &td_stack};
    for (int i = 0; i < 3; i++) {
        PyObject *d = locals[i] != NULL ? PyObject_GetAttr(locals[i], s_dict) : NULL;
        if (d == NULL || !PyDict_Check(d)) {
            if (d != NULL || !PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "vmap: a thread-local without its dict");
            }
            Py_XDECREF(d);
            Py_CLEAR(td_state);
            return -1;
        }
        Py_XSETREF(*dicts[i], d);
    }
    td_thread = id;
    return 0;
}

/* 1 where `binding_route` takes the call (the plan's checks before its call), 0 where it
 * answers NotImplemented, -1 on error. Sets *level (new reference). */
static int
route_takes(PyObject *entry, PyObject *plan, PyObject *values, PyObject *state_values,
            PyObject **level)
{
    PyObject *first = PyTuple_GET_ITEM(values, 0);
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    int ok = tls_is(state_values, s_included, vm_included);
    if (ok > 0) {
        ok = tls_is(state_values, s_excluded, tls_default_excluded);
    }
    if (ok <= 0) {
        return ok;
    }
    PyObject *active = PyDict_GetItemWithError(vm_trace_globals, s_ACTIVE);
    if (active == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if ((ok = PyObject_Not(active)) <= 0) {
        return ok;
    }
    PyObject *flags[2] = {vm_general, vm_route_off};
    for (int i = 0; i < 2; i++) {
        PyObject *on = PyObject_GetAttr(flags[i], s_on);
        if (on == NULL) {
            return -1;
        }
        ok = PyObject_Not(on);
        Py_DECREF(on);
        if (ok <= 0) {
            return ok;
        }
    }
    /* the dispatcher's cached kernel for this call's key set: vmap's fallback itself (the
     * thread's `keep` is the default one: every writer of `excluded` writes `keep` from it,
     * and `excluded` is the default here) */
    PyObject *keys = SLOT(first, T_keyset);
    if (!(vm_key_in != NULL && keys == vm_key_in)) {
        PyObject *with_mode = PyNumber_Or(keys, vm_included);
        PyObject *key = with_mode ? PyNumber_And(with_mode, tls_default_keep) : NULL;
        Py_XDECREF(with_mode);
        if (key == NULL) {
            return -1;
        }
        Py_INCREF(keys);
        Py_XSETREF(vm_key_in, keys);
        Py_XSETREF(vm_key_out, key);
    }
    PyObject *cache = PyTuple_GET_ITEM(plan, 5), *box = PyTuple_GET_ITEM(plan, 7);
    PyObject *kernel = PyDict_GetItemWithError(cache, vm_key_out);
    if (kernel == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (kernel != PyList_GET_ITEM(box, 0)) {
        Py_INCREF(kernel);
        PyObject *checked = PyObject_CallFunctionObjArgs(vm_kernel_ok, entry, kernel, NULL);
        Py_DECREF(kernel);
        if (checked == NULL) {
            return -1;
        }
        ok = PyObject_IsTrue(checked);
        Py_DECREF(checked);
        if (ok <= 0) {
            return ok;
        }
    }
    /* nothing that autograd must record, at a live level */
    PyObject *enabled = tls_get(vm_grad, td_grad, s_enabled);
    if (enabled == NULL) {
        return -1;
    }
    int grad = PyObject_IsTrue(enabled);
    Py_DECREF(enabled);
    if (grad < 0) {
        return -1;
    }
    if (SLOT(first, T_fw_grad) != Py_None) {
        return 0;
    }
    if (grad && (ok = is_true_slot(first, T_requires_grad)) != 0) {
        return ok < 0 ? -1 : 0;
    }
    PyObject *first_level = SLOT(first, B_level);
    if (first_level == NULL) {
        PyErr_SetString(PyExc_AttributeError, "level");
        return -1;
    }
    Py_INCREF(first_level);
    PyObject *levels = tls_get(vc_stack, td_stack, s_levels);
    if (levels == NULL) {
        Py_DECREF(first_level);
        return -1;
    }
    Py_ssize_t depth = PyObject_Length(levels);
    Py_DECREF(levels);
    PyObject *depth_obj = depth < 0 ? NULL : PyLong_FromSsize_t(depth);
    ok = depth_obj ? PyObject_RichCompareBool(first_level, depth_obj, Py_LE) : -1;
    Py_XDECREF(depth_obj);
    if (ok <= 0) {
        Py_DECREF(first_level);
        return ok;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i);
        if (v != Py_None && (ok = plain_tensor(v, grad)) <= 0) {
            Py_DECREF(first_level);
            return ok;
        }
    }
    *level = first_level;
    return 1;
}

static PyObject *
vmap_route(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (vm_plan == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.vmap_route: setup_route not run");
        return NULL;
    }
    if (nargs != 2 || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) < 1) {
        PyErr_SetString(PyExc_TypeError, "vmap_route(entry, values): values must be a "
                        "non-empty tuple");
        return NULL;
    }
    PyObject *entry = args[0], *values = args[1];
    if (PyTuple_GET_SIZE(values) > ROUTE_MAX_ARGS) {
        Py_RETURN_NOTIMPLEMENTED;  /* (no operator with a plan has as many) */
    }
    PyObject *first = PyTuple_GET_ITEM(values, 0);
    if (Py_TYPE(first) != batched_type) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* the plan: (kind, func, Direct, func's entry, func's argument count, the entry's kernel
     * cache, func's entry's, [the entry's kernel checked by `_route_kernel_ok`]) */
    PyObject *plan = PyObject_GetAttr(entry, s_vmap_c);
    if (plan == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear();
        plan = PyObject_CallOneArg(vm_plan, entry);
        if (plan == NULL) {
            return NULL;
        }
    }
    if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 8
        || !PyDict_Check(PyTuple_GET_ITEM(plan, 5)) || !PyDict_Check(PyTuple_GET_ITEM(plan, 6))
        || !PyList_Check(PyTuple_GET_ITEM(plan, 7)) || PyList_GET_SIZE(PyTuple_GET_ITEM(plan, 7)) != 1) {
        Py_DECREF(plan);
        PyErr_SetString(PyExc_TypeError, "vmap_route: a plan must be _route_plan's 8-tuple");
        return NULL;
    }
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(plan, 0));
    if (kind == ROUTE_NONE) {
        Py_DECREF(plan);
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (thread_dicts() < 0) {
        Py_DECREF(plan);
        return NULL;
    }
    PyObject *state_values = td_state;
    Py_INCREF(state_values);
    PyObject *level = NULL;
    int takes = PyDict_Check(state_values)
                    ? route_takes(entry, plan, values, state_values, &level) : 0;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    if (takes > 0 && kind == ROUTE_POINTWISE_PAIR) {
        /* `pointwise_pair`'s case: two tensors, the batched sample with the most dims, no
         * 0-dim sample meeting another dtype */
        PyObject *other = n == 2 ? PyTuple_GET_ITEM(values, 1) : Py_None;
        if (other == Py_None) {
            takes = 0;
        } else {
            Py_ssize_t rank = PyTuple_GET_SIZE(SLOT(first, T_sizes));
            if (rank < PyTuple_GET_SIZE(SLOT(other, T_sizes))
                || (rank == 0 && SLOT(first, T_dtype) != SLOT(other, T_dtype))) {
                takes = 0;
            }
        }
        if (!takes) {
            Py_CLEAR(level);
        }
    }
    if (takes <= 0) {
        Py_DECREF(plan);
        Py_DECREF(state_values);
        if (takes < 0) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *value = SLOT(first, B_value);
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "value");
        Py_DECREF(plan);
        Py_DECREF(state_values);
        Py_DECREF(level);
        return NULL;
    }
    Py_INCREF(value);
    /* FuncTorchVmapMode off: the thread's sets are back to the defaults */
    PyObject *result = NULL;
    Py_ssize_t pending = PyList_GET_SIZE(tls_nondefault);
    if (PyDict_SetItem(state_values, s_included, tls_default_included) == 0
        && (pending == 0 || nondefault_pop() == 0)) {
        PyObject *call[ROUTE_MAX_ARGS] = {value};
        Py_ssize_t count = 1;
        if (kind != ROUTE_POINTWISE) {
            for (Py_ssize_t i = 1; i < n; i++) {
                call[count++] = PyTuple_GET_ITEM(values, i);
            }
        }
        result = route_call(plan, call, count);
    }
    /* the `finally`: mode back on, keeping the call's exception if any */
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    int restored = 0;
    int defaults = tls_is(state_values, s_included, tls_default_included);
    if (defaults > 0) {
        defaults = tls_is(state_values, s_excluded, tls_default_excluded);
    }
    if (defaults > 0) {
        restored = PyList_Append(tls_nondefault, Py_None) == 0
                   && PyDict_SetItem(state_values, s_included, vm_included) == 0;
    } else if (defaults == 0) {
        PyObject *excluded = tls_get(tls_state, state_values, s_excluded);
        PyObject *done = excluded ? PyObject_CallFunctionObjArgs(vm_set, vm_included, excluded,
                                                                 NULL) : NULL;
        Py_XDECREF(excluded);
        restored = done != NULL;
        Py_XDECREF(done);
    }
    Py_DECREF(state_values);
    Py_DECREF(value);
    Py_DECREF(plan);
    if (!restored) {
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
        Py_DECREF(level);
        return NULL;
    }
    PyErr_Restore(type, error, traceback);
    if (result == NULL) {
        Py_DECREF(level);
        return NULL;
    }
    PyObject *wrapped = make_batched_of(result, level);
    Py_DECREF(result);
    Py_DECREF(level);
    return wrapped;
}

/* --- vmap's call: func/_vmap.py's `_vmap_once` (`vmap_once_reference`) ---------------------
 *
 * The common case in C: `in_dims` an int or one int/None per argument, every mapped
 * argument a tensor mapped over dimension 0, the sizes equal. The level is pushed and
 * FuncTorchVmapMode switched on as the reference does, the inputs wrapped (`make_batched`),
 * the function called, one batched output of the level unwrapped for `out_dims=0` (any
 * other output through the reference's `_unbatch`), and everything restored. Any other
 * case is the reference's, called before anything changes. */

static PyObject *vc_reference = NULL, *vc_unbatch = NULL, *vc_mode_bit = NULL, *vc_set = NULL;
static PyTypeObject *level_type = NULL;
static Py_ssize_t L_level, L_batch_size, L_randomness;

static PyObject *
setup_vmap_call(PyObject *module, PyObject *args)
{
    PyObject *reference, *unbatch, *level, *mode_bit, *stack, *set;
    if (!PyArg_ParseTuple(args, "OOO!OOO:setup_vmap_call", &reference, &unbatch, &PyType_Type,
                          &level, &mode_bit, &stack, &set)) {
        return NULL;
    }
    if (batched_type == NULL || tls_state == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_accel.setup_vmap_call: setup_batched/setup_tls not run");
        return NULL;
    }
    PyTypeObject *l = (PyTypeObject *)level;
    if (slot_offset(l, "level", &L_level) || slot_offset(l, "batch_size", &L_batch_size)
        || slot_offset(l, "randomness", &L_randomness)) {
        return NULL;
    }
    Py_INCREF(level);
    Py_XSETREF(level_type, l);
    PyObject **fields[] = {&vc_reference, &vc_unbatch, &vc_mode_bit, &vc_stack, &vc_set};
    PyObject *given[] = {reference, unbatch, mode_bit, stack, set};
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
        Py_INCREF(given[i]);
        Py_XSETREF(*fields[i], given[i]);
    }
    td_thread = 0;
    Py_CLEAR(td_state);
    Py_RETURN_NONE;
}

/* The batch size of the common case (a new reference), or NULL without an error for the
 * reference's case. */
static PyObject *
flat_batch_size(PyObject *in_dims, PyObject *args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    int per_argument = PyTuple_CheckExact(in_dims);
    if (per_argument ? PyTuple_GET_SIZE(in_dims) != n : !PyLong_CheckExact(in_dims)) {
        return NULL;
    }
    PyObject *size = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = per_argument ? PyTuple_GET_ITEM(in_dims, i) : in_dims;
        if (d == Py_None) {
            continue;
        }
        PyObject *x = PyTuple_GET_ITEM(args, i);
        if (!PyLong_CheckExact(d) || PyLong_AsLong(d) != 0 || !PyObject_TypeCheck(x, tensor_type)
            || !PyTuple_CheckExact(SLOT(x, T_sizes)) || PyTuple_GET_SIZE(SLOT(x, T_sizes)) < 1) {
            PyErr_Clear();
            return NULL;
        }
        PyObject *here = PyTuple_GET_ITEM(SLOT(x, T_sizes), 0);
        if (!PyLong_CheckExact(here)) {
            return NULL;
        }
        if (size == NULL) {
            size = here;
        } else if (PyObject_RichCompareBool(size, here, Py_EQ) != 1) {
            PyErr_Clear();
            return NULL;  /* (the reference raises the error) */
        }
    }
    Py_XINCREF(size);
    return size;
}

static PyObject *
vmap_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (vc_reference == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel.vmap_call: setup_vmap_call not run");
        return NULL;
    }
    if (nargs != 6 || !PyTuple_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "vmap_call(func, in_dims, out_dims, randomness, args, kwargs)");
        return NULL;
    }
    PyObject *func = args[0], *in_dims = args[1], *out_dims = args[2], *inputs = args[4],
             *kwargs = args[5];
    PyObject *batch_size = flat_batch_size(in_dims, inputs);
    if (batch_size == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(vc_reference, args, nargs, NULL);
    }
    if (thread_dicts() < 0) {
        Py_DECREF(batch_size);
        return NULL;
    }
    PyObject *state_values = td_state;
    Py_INCREF(state_values);
    /* `push_level(batch_size, randomness)` */
    PyObject *levels = PyDict_GetItemWithError(td_stack, s_levels);
    PyObject *level = levels && PyList_CheckExact(levels)
                          ? PyLong_FromSsize_t(PyList_GET_SIZE(levels) + 1) : NULL;
    PyObject *entry = level ? level_type->tp_alloc(level_type, 0) : NULL;
    if (entry != NULL) {
        set_slot(entry, L_level, level);
        set_slot(entry, L_batch_size, batch_size);
        set_slot(entry, L_randomness, args[3]);
    }
    if (entry == NULL || PyList_Append(levels, entry) < 0) {
        Py_XDECREF(entry);
        Py_XDECREF(level);
        Py_DECREF(batch_size);
        Py_DECREF(state_values);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "vmap: the level stack is not a list");
        }
        return NULL;  /* (nothing pushed) */
    }
    Py_DECREF(entry);
    /* FuncTorchVmapMode on */
    PyObject *included = tls_get(tls_state, state_values, s_included);
    PyObject *excluded = included ? tls_get(tls_state, state_values, s_excluded) : NULL;
    PyObject *on = excluded ? PyNumber_Or(included, vc_mode_bit) : NULL;
    PyObject *result = NULL;
    int was_default = -1;
    if (on != NULL) {
        was_default = same_value(included, tls_default_included);
        if (was_default > 0) {
            was_default = same_value(excluded, tls_default_excluded);
        }
    }
    if (was_default >= 0 && PyDict_SetItem(state_values, s_included, on) == 0
        && (!was_default || PyList_Append(tls_nondefault, Py_None) == 0)) {
        Py_ssize_t n = PyTuple_GET_SIZE(inputs);
        PyObject *wrapped = PyTuple_New(n);
        int per_argument = PyTuple_CheckExact(in_dims);
        for (Py_ssize_t i = 0; wrapped != NULL && i < n; i++) {
            PyObject *x = PyTuple_GET_ITEM(inputs, i);
            PyObject *d = per_argument ? PyTuple_GET_ITEM(in_dims, i) : in_dims;
            PyObject *item = d == Py_None ? (Py_INCREF(x), x) : make_batched_of(x, level);
            if (item == NULL) {
                Py_CLEAR(wrapped);
                break;
            }
            PyTuple_SET_ITEM(wrapped, i, item);
        }
        PyObject *out = wrapped == NULL ? NULL
                        : PyObject_Call(func, wrapped, PyDict_GET_SIZE(kwargs) ? kwargs : NULL);
        Py_XDECREF(wrapped);
        if (out != NULL) {
            int simple = PyLong_CheckExact(out_dims) && PyLong_AsLong(out_dims) == 0
                         && Py_TYPE(out) == batched_type;
            PyObject *out_level = simple ? SLOT(out, B_level) : NULL;
            int same = out_level != NULL && SLOT(out, B_value) != NULL
                       ? same_value(out_level, level) : 0;
            if (same > 0) {
                result = SLOT(out, B_value);
                Py_INCREF(result);
            } else if (same == 0) {
                result = PyObject_CallFunctionObjArgs(vc_unbatch, func, out, out_dims, level,
                                                      batch_size, NULL);
            }
            Py_DECREF(out);
        }
    }
    /* the `finally`: the thread's sets as they were, the level popped; the call's exception
     * kept if any */
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    int failed = 0;
    if (was_default >= 0) {
        PyObject *now_included = tls_get(tls_state, state_values, s_included);
        PyObject *now_excluded = now_included ? tls_get(tls_state, state_values, s_excluded)
                                              : NULL;
        int same = now_excluded == NULL ? -1 : was_default;
        if (same > 0) {
            same = same_value(now_included, on);
        }
        if (same > 0) {
            same = same_value(now_excluded, excluded);
        }
        if (same > 0) {
            Py_ssize_t pending = PyList_GET_SIZE(tls_nondefault);
            failed = PyDict_SetItem(state_values, s_included, included) < 0
                     || (pending > 0
                         && nondefault_pop() < 0);
        } else if (same == 0) {
            PyObject *done = PyObject_CallFunctionObjArgs(vc_set, included, excluded, NULL);
            failed = done == NULL;
            Py_XDECREF(done);
        } else {
            failed = 1;
        }
        Py_XDECREF(now_included);
        Py_XDECREF(now_excluded);
    }
    levels = PyDict_GetItem(td_stack, s_levels);  /* (the list pushed on, unless replaced) */
    Py_ssize_t depth = levels && PyList_Check(levels) ? PyList_GET_SIZE(levels) : 0;
    failed = failed || depth < 1 || PyList_SetSlice(levels, depth - 1, depth, NULL) < 0;
    Py_XDECREF(included);
    Py_XDECREF(excluded);
    Py_XDECREF(on);
    Py_DECREF(state_values);
    Py_DECREF(level);
    Py_DECREF(batch_size);
    if (failed) {
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "vmap: the level stack was changed inside vmap");
        }
        return NULL;
    }
    PyErr_Restore(type, error, traceback);
    return result;
}

static PyMethodDef accel_methods[] = {
    {"setup_core", setup_core, METH_VARARGS,
     "setup_core(Tensor, Storage, VersionCounter, cpu): the classes whose objects it makes."},
    {"setup_alloc", setup_alloc, METH_VARARGS,
     "setup_alloc(descrs, new_row_major, strides_of): the allocation's dtypes and helpers."},
    {"make", (PyCFunction)(void (*)(void))make, METH_FASTCALL,
     "make(storage, sizes, strides, offset, dtype, device): Tensor._make."},
    {"make_dataless", (PyCFunction)(void (*)(void))make_dataless, METH_FASTCALL,
     "make_dataless(cls, sizes, strides, offset, dtype, device, keyset, nbytes): "
     "core.tensor.make_dataless."},
    {"make_view", (PyCFunction)(void (*)(void))make_view, METH_FASTCALL,
     "make_view(base, sizes, strides, offset): Tensor._make_view."},
    {"setup_quiet", setup_quiet, METH_VARARGS,
     "setup_quiet(row_major_ordered, quiet_call, thread, flag): the fast functions' helpers."},
    {"new_row_major", (PyCFunction)(void (*)(void))new_row_major, METH_FASTCALL,
     "new_row_major(sizes, dtype, device): a new row-major tensor, its NumPy view built."},
    {"quiet", (PyCFunction)(void (*)(void))quiet, METH_FASTCALL | METH_KEYWORDS,
     "quiet(fn, *args, **kwargs): fn's call with NumPy's floating-point warnings off."},
    {"array", array, METH_O, "array(t): the tensor's NumPy view (cached)."},
    {"unary", make_unary, METH_VARARGS,
     "unary(fn, kernels, kernel, dtypes, out_dtype, name, loop=0, small=None) -> "
     "(functional, inplace)"},
    {"sum_small", (PyCFunction)(void (*)(void))sum_small, METH_FASTCALL,
     "sum_small(x, dims, out) -> bool: np.add.reduce(x, dims, out=out) of a small run."},
    {"softmax_small", (PyCFunction)(void (*)(void))softmax_small, METH_FASTCALL,
     "softmax_small(x, dim, out, log) -> bool: compiled.py's softmax_rows, in C."},
    {"matmul_small", (PyCFunction)(void (*)(void))matmul_small, METH_FASTCALL,
     "matmul_small(a, b, out) -> bool: np.matmul's own inner loop on 2-d arrays."},
    {"cat_function", cat_function, METH_NOARGS,
     "cat_function() -> f: f(tensors, dim) is cat's fast function (kernels/cat.py)."},
    {"binary", make_binary, METH_VARARGS,
     "binary(fn, kernels, kernel, dtypes, numbers, wrapped, out_dtype, alpha, name) -> "
     "(functional, inplace)"},
    {"setup_tls", setup_tls, METH_VARARGS,
     "setup_tls(STATE, NONDEFAULT, included, excluded, excluded_below, keep_below, keep, "
     "reference): dispatch/tls.py's state and defaults."},
    {"call_below_autograd", (PyCFunction)(void (*)(void))call_below_autograd, METH_FASTCALL,
     "call_below_autograd(fn, *args): fn(*args) with the autograd keys excluded."},
    {"setup_graph", setup_graph, METH_VARARGS,
     "setup_graph(Node, AccumulateGrad, sequence, init_reference, grad_accumulator_reference)"
     " -> (Node.__init__, AccumulateGrad.__init__)"},
    {"setup_saved", setup_saved, METH_VARARGS,
     "setup_saved(SavedTensor, TensorGeometry, PYTHON_KEYS, init_reference, "
     "geometry_init_reference, alias_reference) -> (SavedTensor.__init__, "
     "TensorGeometry.__init__)"},
    {"grad_accumulator", grad_accumulator, METH_O,
     "grad_accumulator(t): the one AccumulateGrad of leaf t."},
    {"setup_batched", setup_batched, METH_VARARGS,
     "setup_batched(BatchedTensor, BATCHED_KEYS, make_batched_reference)."},
    {"setup_route", setup_route, METH_VARARGS,
     "setup_route(vmap_included, PLAIN_CPU, PLAIN_KEY, trace_globals, general_path_only, "
     "binding_route_off, STACK, GRAD, route_plan, route_kernel_ok, tls_set, Direct)."},
    {"make_batched", (PyCFunction)(void (*)(void))make_batched, METH_FASTCALL,
     "make_batched(value, level): func._batched._make_batched."},
    {"vmap_route", (PyCFunction)(void (*)(void))vmap_route, METH_FASTCALL,
     "vmap_route(entry, values): func._key.binding_route."},
    {"setup_vmap_call", setup_vmap_call, METH_VARARGS,
     "setup_vmap_call(vmap_once_reference, unbatch, VmapLevel, VMAP_MODE_BIT, STACK, tls_set)."},
    {"vmap_call", (PyCFunction)(void (*)(void))vmap_call, METH_FASTCALL,
     "vmap_call(func, in_dims, out_dims, randomness, args, kwargs): func._vmap._vmap_once."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pyaten._accel",
    .m_doc = "The optional compiled accelerator of pyaten's small-operator call path.",
    .m_size = -1,
    .m_methods = accel_methods,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    import_array();
    if (PyType_Ready(&Fast_Type) < 0) {
        return NULL;
    }
    s_keyset = PyUnicode_InternFromString("_keyset");
    s_cpu = PyUnicode_InternFromString("cpu");
    s_context = PyUnicode_InternFromString("context");
    s_item = PyUnicode_InternFromString("item");
    s_numpy = PyUnicode_InternFromString("_numpy");
    s_version_counter = PyUnicode_InternFromString("_version_counter");
    s_value = PyUnicode_InternFromString("value");
    PyObject *out_name = PyUnicode_InternFromString("out");
    kw_out = out_name ? PyTuple_Pack(1, out_name) : NULL;
    Py_XDECREF(out_name);
    one = PyLong_FromLong(1);
    zero = PyLong_FromLong(0);
    empty_tuple = PyTuple_New(0);
    s_included = PyUnicode_InternFromString("included");
    s_excluded = PyUnicode_InternFromString("excluded");
    s_keep = PyUnicode_InternFromString("keep");
    s_dict = PyUnicode_InternFromString("__dict__");
    s_ACTIVE = PyUnicode_InternFromString("ACTIVE");
    s_on = PyUnicode_InternFromString("on");
    s_levels = PyUnicode_InternFromString("levels");
    s_enabled = PyUnicode_InternFromString("enabled");
    s_level = PyUnicode_InternFromString("level");
    s_vmap_c = PyUnicode_InternFromString("_vmap_c");
    s_cache = PyUnicode_InternFromString("_cache");
    s_vmap_route = PyUnicode_InternFromString("_vmap_route");
    s_checked = PyUnicode_InternFromString("checked");
    s_fast = PyUnicode_InternFromString("fast");
    s_check = PyUnicode_InternFromString("check");
    s_itemsize = PyUnicode_InternFromString("itemsize");
    if (!s_ACTIVE || !s_on || !s_levels || !s_enabled || !s_level || !s_vmap_c || !s_cache
        || !s_vmap_route || !s_checked || !s_fast || !s_check || !s_itemsize) {
        return NULL;
    }
    if (!s_keyset || !s_cpu || !s_context || !s_item || !s_numpy || !s_version_counter || !s_value
        || !kw_out || !one || !zero || !empty_tuple || !s_included || !s_excluded
        || !s_keep || !s_dict) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&accel_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "VERSION", ACCEL_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&Fast_Type);
    if (PyModule_AddObject(module, "FastFunction", (PyObject *)&Fast_Type) < 0) {
        Py_DECREF(&Fast_Type);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
