/* pyaten._accel_graph: the recording half of a generated autograd kernel, in two C calls.
 *
 * Note: the compiled recording calls (the long form is in pyaten/autograd/accel_graph.py)
 *     A generated autograd kernel (pyaten/codegen/gen_autograd.py) that records a node does
 *     two things around the formulas' saves: it makes the node with one edge per
 *     differentiable input (`make_node`), and it runs the operator below autograd and makes
 *     the result the node's output 0 (`run_recorded`, `run_recorded_view` for a view, which
 *     also remembers the view on its base). Their Python versions in
 *     pyaten/autograd/runtime.py are the reference; these do the same stores in the same
 *     order, reading and writing the Python classes' slots at the offsets their member
 *     descriptors report (read once, in `setup`). Anything that is not a Tensor with plain
 *     attribute access (a subclass overriding one of the attributes, `__getattr__`...) goes
 *     to the reference, for the whole call.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* Raised with every change of this module's Python-facing API; the loader
 * (pyaten/autograd/accel_graph.py) uses only the version it was written for. */
#define ACCEL_GRAPH_VERSION 1

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static PyTypeObject *tensor_type = NULL, *node_type = NULL, *dtype_type = NULL;
static PyObject *no_edge = NULL;             /* graph.NO_EDGE, the shared (None, 0) */
static PyObject *zero = NULL;
static PyObject *py_gradient_edge = NULL;    /* graph.gradient_edge: any other input */
static PyObject *py_grad_accumulator = NULL; /* graph.grad_accumulator (compiled or not) */
static PyObject *py_call_below = NULL;       /* tls.call_below_autograd (compiled or not) */
static PyObject *py_record_output = NULL;    /* runtime.record_output: any other output */
static PyObject *py_track_view = NULL;       /* runtime.track_view */
static PyObject *plain_types = NULL;         /* dict: Tensor subclass -> whether plain */

/* Tensor, Node and dtype slots */
static Py_ssize_t T_grad_fn, T_output_nr, T_requires_grad, T_dtype, T_sizes, T_device, T_base;
static Py_ssize_t N_next, N_meta, N_counts;
static Py_ssize_t D_floating, D_complex;

/* the Tensor attributes read or written here: a subclass that redefines one is not plain */
static const char *tensor_names[] = {"grad_fn", "output_nr", "_requires_grad", "_dtype",
                                     "_sizes", "_device", "_base"};
#define N_TENSOR_NAMES (sizeof(tensor_names) / sizeof(tensor_names[0]))
static PyObject *tensor_descrs[N_TENSOR_NAMES];

static int
slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset, PyObject **descr_out)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type
        || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "_accel_graph.setup(): %s.%s is not an object slot",
                     type->tp_name, name);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    if (descr_out != NULL) {
        *descr_out = descr;
    }
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

static inline void
set_slot_new(PyObject *obj, Py_ssize_t offset, PyObject *value)  /* steals `value` */
{
    PyObject **where = (PyObject **)((char *)obj + offset);
    PyObject *old = *where;
    *where = value;
    Py_XDECREF(old);
}

/* Whether `t` is a Tensor whose attributes used here are the slots themselves: the exact
 * class, or a subclass (nn.Parameter) with plain attribute access and none of them redefined
 * (decided once per class). 1 yes, 0 no, -1 error. */
static int
plain_tensor(PyObject *t)
{
    PyTypeObject *type = Py_TYPE(t);
    if (type == tensor_type) {
        return 1;
    }
    if (!PyType_IsSubtype(type, tensor_type)) {
        return 0;
    }
    PyObject *known = PyDict_GetItemWithError(plain_types, (PyObject *)type);
    if (known != NULL) {
        return known == Py_True;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    int plain = type->tp_getattro == PyObject_GenericGetAttr
                && type->tp_setattro == PyObject_GenericSetAttr;
    for (size_t i = 0; plain && i < N_TENSOR_NAMES; i++) {
        PyObject *name = PyUnicode_InternFromString(tensor_names[i]);
        if (name == NULL) {
            return -1;
        }
        plain = _PyType_Lookup(type, name) == tensor_descrs[i];
        Py_DECREF(name);
    }
    if (PyDict_SetItem(plain_types, (PyObject *)type, plain ? Py_True : Py_False) < 0) {
        return -1;
    }
    return plain;
}

/* A Tensor whose slots read here are all set (a half-built one goes to the reference). */
static int
ready_tensor(PyObject *t)
{
    int plain = plain_tensor(t);
    if (plain <= 0) {
        return plain;
    }
    return SLOT(t, T_grad_fn) != NULL && SLOT(t, T_output_nr) != NULL
           && SLOT(t, T_requires_grad) != NULL && SLOT(t, T_dtype) != NULL
           && SLOT(t, T_sizes) != NULL && SLOT(t, T_device) != NULL
           && SLOT(t, T_base) != NULL;
}

/* graph.gradient_edge(t): (grad_fn, output_nr), (its AccumulateGrad, 0) or NO_EDGE */
static PyObject *
edge_of(PyObject *t)
{
    if (t == Py_None) {
        Py_INCREF(no_edge);
        return no_edge;
    }
    int ready = ready_tensor(t);
    if (ready <= 0) {
        return ready < 0 ? NULL : PyObject_CallOneArg(py_gradient_edge, t);
    }
    PyObject *fn = SLOT(t, T_grad_fn);
    if (fn != Py_None) {
        return PyTuple_Pack(2, fn, SLOT(t, T_output_nr));
    }
    int requires = PyObject_IsTrue(SLOT(t, T_requires_grad));
    if (requires < 0) {
        return NULL;
    }
    if (!requires) {
        Py_INCREF(no_edge);
        return no_edge;
    }
    PyObject *accumulator = PyObject_CallOneArg(py_grad_accumulator, t);
    if (accumulator == NULL) {
        return NULL;
    }
    PyObject *edge = PyTuple_Pack(2, accumulator, zero);
    Py_DECREF(accumulator);
    return edge;
}

/* make_node(cls, *inputs): `cls()` with `next_functions` one edge per input (a list input:
 * one per element, and `_counts` says how many each input has) */
static PyObject *
make_node(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel_graph.make_node: setup not run");
        return NULL;
    }
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "make_node() missing 1 required positional argument: "
                                         "'cls'");
        return NULL;
    }
    Py_ssize_t n_inputs = nargs - 1;
    /* a list input is read through a tuple copy, so nothing run here can resize it */
    PyObject **inputs = PyMem_Malloc(sizeof(PyObject *) * (n_inputs ? n_inputs : 1));
    if (inputs == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t total = 0, copied = 0;
    int lists = 0;
    PyObject *node = NULL, *edges = NULL, *counts = NULL;
    for (; copied < n_inputs; copied++) {
        PyObject *input = args[copied + 1];
        if (PyList_Check(input) || PyTuple_Check(input)) {
            lists = 1;
            input = PySequence_Tuple(input);
            if (input == NULL) {
                goto done;
            }
            total += PyTuple_GET_SIZE(input);
        } else {
            Py_INCREF(input);
            total += 1;
        }
        inputs[copied] = input;
    }
    node = PyObject_CallNoArgs(args[0]);
    edges = node == NULL ? NULL : PyTuple_New(total);
    counts = lists && edges != NULL ? PyTuple_New(n_inputs) : NULL;
    if (edges == NULL || (lists && counts == NULL)) {
        goto fail;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n_inputs; i++) {
        PyObject *input = inputs[i];
        int many = PyList_Check(args[i + 1]) || PyTuple_Check(args[i + 1]);
        Py_ssize_t n = many ? PyTuple_GET_SIZE(input) : 1;
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *edge = edge_of(many ? PyTuple_GET_ITEM(input, j) : input);
            if (edge == NULL) {
                goto fail;
            }
            PyTuple_SET_ITEM(edges, k++, edge);
        }
        if (lists) {
            PyObject *count = PyLong_FromSsize_t(n);
            if (count == NULL) {
                goto fail;
            }
            PyTuple_SET_ITEM(counts, i, count);
        }
    }
    if (PyObject_TypeCheck(node, node_type)) {
        set_slot_new(node, N_next, edges);
        if (lists) {
            set_slot_new(node, N_counts, counts);
        }
        edges = counts = NULL;
    } else if (PyObject_SetAttrString(node, "next_functions", edges) < 0
               || (lists && PyObject_SetAttrString(node, "_counts", counts) < 0)) {
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(node);
done:
    Py_XDECREF(edges);
    Py_XDECREF(counts);
    for (Py_ssize_t i = 0; i < copied; i++) {
        Py_DECREF(inputs[i]);
    }
    PyMem_Free(inputs);
    return node;
}

/* The output's history, for a plain Tensor `out` of a Node `node`: 1 when `out` became its
 * output 0, 0 when it was left alone (not floating point or complex, or one of the inputs),
 * -1 on error, -2 where the reference must decide. */
static int
set_output(PyObject *node, PyObject *out, PyObject *const *inputs, Py_ssize_t n)
{
    int ready = ready_tensor(out);
    if (ready <= 0) {
        return ready < 0 ? -1 : -2;
    }
    if (!PyObject_TypeCheck(node, node_type)) {
        return -2;
    }
    PyObject *dtype = SLOT(out, T_dtype);
    if (!PyObject_TypeCheck(dtype, dtype_type) || SLOT(dtype, D_floating) == NULL
        || SLOT(dtype, D_complex) == NULL) {
        return -2;
    }
    int differentiable = PyObject_IsTrue(SLOT(dtype, D_floating));
    if (differentiable == 0) {
        differentiable = PyObject_IsTrue(SLOT(dtype, D_complex));
    }
    if (differentiable <= 0) {
        return differentiable;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (inputs[i] == out) {
            return 0;
        }
    }
    PyObject *entry = PyTuple_Pack(3, SLOT(out, T_sizes), dtype, SLOT(out, T_device));
    if (entry == NULL) {
        return -1;
    }
    PyObject *meta = PyList_New(1);
    if (meta == NULL) {
        Py_DECREF(entry);
        return -1;
    }
    PyList_SET_ITEM(meta, 0, entry);
    set_slot(out, T_grad_fn, node);
    set_slot(out, T_output_nr, zero);
    set_slot(out, T_requires_grad, Py_True);
    set_slot_new(node, N_meta, meta);
    return 1;
}

static PyObject *
run(PyObject *const *args, Py_ssize_t nargs, int view)
{
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel_graph.run_recorded: setup not run");
        return NULL;
    }
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "run_recorded() needs the node and the kernel below");
        return NULL;
    }
    PyObject *node = args[0];
    /* call_below_autograd(below, *args) */
    PyObject *out = PyObject_Vectorcall(py_call_below, args + 1, nargs - 1, NULL);
    if (out == NULL) {
        return NULL;
    }
    int made = set_output(node, out, args + 2, nargs - 2);
    if (made == -2) {  /* the reference: record_output(node, out, args, view) */
        PyObject *inputs = PyTuple_New(nargs - 2);
        if (inputs == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (Py_ssize_t i = 2; i < nargs; i++) {
            Py_INCREF(args[i]);
            PyTuple_SET_ITEM(inputs, i - 2, args[i]);
        }
        PyObject *done = PyObject_CallFunctionObjArgs(py_record_output, node, out, inputs,
                                                      view ? Py_True : Py_False, NULL);
        Py_DECREF(inputs);
        if (done == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(done);
        return out;
    }
    if (made < 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (made && view) {  /* track_view(out), when its base has history */
        PyObject *base = SLOT(out, T_base);
        int tracked = base == Py_None;
        if (!tracked) {
            int ready = ready_tensor(base);
            tracked = ready > 0 && SLOT(base, T_grad_fn) == Py_None;
            if (ready < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        if (!tracked) {
            PyObject *done = PyObject_CallOneArg(py_track_view, out);
            if (done == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(done);
        }
    }
    return out;
}

/* run_recorded(node, below, *args) */
static PyObject *
run_recorded(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 0);
}

/* run_recorded_view(node, below, *args) */
static PyObject *
run_recorded_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 1);
}

/* setup(Tensor, Node, dtype, NO_EDGE, gradient_edge, grad_accumulator, call_below_autograd,
 *       record_output, track_view) */
static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *tensor, *node, *dtype, *edge, *gradient_edge, *accumulator, *call_below, *record,
        *track;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOOO:setup", &PyType_Type, &tensor, &PyType_Type,
                          &node, &PyType_Type, &dtype, &PyTuple_Type, &edge, &gradient_edge,
                          &accumulator, &call_below, &record, &track)) {
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)tensor, *n = (PyTypeObject *)node,
        *d = (PyTypeObject *)dtype;
    Py_ssize_t *tensor_offsets[] = {&T_grad_fn, &T_output_nr, &T_requires_grad, &T_dtype,
                                    &T_sizes, &T_device, &T_base};
    for (size_t i = 0; i < N_TENSOR_NAMES; i++) {
        if (slot_offset(t, tensor_names[i], tensor_offsets[i], &tensor_descrs[i]) < 0) {
            return NULL;
        }
        Py_INCREF(tensor_descrs[i]);
    }
    if (slot_offset(n, "next_functions", &N_next, NULL) < 0
        || slot_offset(n, "input_meta", &N_meta, NULL) < 0
        || slot_offset(n, "_counts", &N_counts, NULL) < 0
        || slot_offset(d, "is_floating_point", &D_floating, NULL) < 0
        || slot_offset(d, "is_complex", &D_complex, NULL) < 0) {
        return NULL;
    }
    if (plain_types == NULL && (plain_types = PyDict_New()) == NULL) {
        return NULL;
    }
    PyDict_Clear(plain_types);
    Py_INCREF(tensor);
    Py_XSETREF(tensor_type, t);
    Py_INCREF(node);
    Py_XSETREF(node_type, n);
    Py_INCREF(dtype);
    Py_XSETREF(dtype_type, d);
    PyObject **targets[] = {&no_edge, &py_gradient_edge, &py_grad_accumulator, &py_call_below,
                            &py_record_output, &py_track_view};
    PyObject *values[] = {edge, gradient_edge, accumulator, call_below, record, track};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        Py_INCREF(values[i]);
        Py_XSETREF(*targets[i], values[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(Tensor, Node, dtype, NO_EDGE, gradient_edge, grad_accumulator, "
     "call_below_autograd, record_output, track_view): what the calls below use."},
    {"make_node", (PyCFunction)(void (*)(void))make_node, METH_FASTCALL,
     "make_node(cls, *inputs): a node with one edge per input (runtime.make_node)."},
    {"run_recorded", (PyCFunction)(void (*)(void))run_recorded, METH_FASTCALL,
     "run_recorded(node, below, *args): the call below autograd, its result made the node's "
     "output (runtime.run_recorded)."},
    {"run_recorded_view", (PyCFunction)(void (*)(void))run_recorded_view, METH_FASTCALL,
     "run_recorded_view(node, below, *args): run_recorded, and the view remembered on its "
     "base (runtime.run_recorded_view)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pyaten._accel_graph",
    .m_doc = "The compiled recording calls of the generated autograd kernels (optional).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__accel_graph(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    zero = PyLong_FromLong(0);
    if (zero == NULL || PyModule_AddIntConstant(module, "VERSION", ACCEL_GRAPH_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
