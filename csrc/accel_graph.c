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
#define ACCEL_GRAPH_VERSION 3

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


/* --- the engine's loop (Note: the compiled engine loop, in pyaten/autograd/engine.py) ------
 *
 * run_graph(roots, root_grads, keep_graph): steps 1-3 of `engine.execute` for a whole
 * backward (no captured edges), the same operations in the same order: the dependency count
 * of every node reachable from the roots, the roots' buffers, then the ready nodes newest
 * first (highest sequence number, then the order they became ready), each through the
 * Python `_run_tensor_hooks` (when it has tensor hooks, retained grads, or is an
 * AccumulateGrad) and `_call`, its gradients fitted (`_fit`) and added to its children's
 * buffers. */

static PyObject *py_run_tensor_hooks = NULL, *py_call = NULL, *py_fit = NULL;
static PyObject *anomaly = NULL;  /* anomaly_mode.ANOMALY: [enabled, check_nan] */
static Py_ssize_t N_pre_hooks, N_hooks;
static PyObject *s_apply, *s_release_variables, *s_name;
static PyTypeObject *accumulate_type = NULL;
static Py_ssize_t N_sequence, N_tensor_pre_hooks, N_retains_grad;
static PyObject *s_sizes, *s_dtype;

typedef struct {
    long long sequence;  /* the node's _sequence_nr */
    Py_ssize_t counter;  /* the order it became ready */
    PyObject *node;      /* owned */
} Ready;

typedef struct {
    Ready *items;
    Py_ssize_t size, capacity;
} Heap;

/* heapq's order on (-sequence, counter): the larger sequence first, then the smaller counter */
static inline int
before(const Ready *a, const Ready *b)
{
    return a->sequence > b->sequence || (a->sequence == b->sequence && a->counter < b->counter);
}

static int
heap_push(Heap *heap, PyObject *node, Py_ssize_t counter)
{
    PyObject *number = SLOT(node, N_sequence);
    long long sequence = number == NULL ? -1 : PyLong_AsLongLong(number);
    if (sequence == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (heap->size == heap->capacity) {
        Py_ssize_t capacity = heap->capacity ? 2 * heap->capacity : 16;
        Ready *items = PyMem_Realloc(heap->items, sizeof(Ready) * capacity);
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        heap->items = items;
        heap->capacity = capacity;
    }
    Py_ssize_t i = heap->size++;
    Ready entry = {sequence, counter, node};
    Py_INCREF(node);
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!before(&entry, &heap->items[parent])) {
            break;
        }
        heap->items[i] = heap->items[parent];
        i = parent;
    }
    heap->items[i] = entry;
    return 0;
}

static PyObject *  /* a new reference */
heap_pop(Heap *heap)
{
    PyObject *node = heap->items[0].node;
    Ready last = heap->items[--heap->size];
    Py_ssize_t i = 0, n = heap->size;
    while (1) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && before(&heap->items[child + 1], &heap->items[child])) {
            child++;
        }
        if (!before(&heap->items[child], &last)) {
            break;
        }
        heap->items[i] = heap->items[child];
        i = child;
    }
    if (n > 0) {
        heap->items[i] = last;
    }
    return node;
}

static void
heap_clear(Heap *heap)
{
    for (Py_ssize_t i = 0; i < heap->size; i++) {
        Py_DECREF(heap->items[i].node);
    }
    PyMem_Free(heap->items);
}

/* node.next_functions as a sequence of (child, nr) pairs: a new reference (a tuple or list) */
static PyObject *
edges_of(PyObject *node)
{
    PyObject *edges = PyObject_TypeCheck(node, node_type) ? SLOT(node, N_next) : NULL;
    if (edges != NULL && PyTuple_CheckExact(edges)) {
        Py_INCREF(edges);
        return edges;
    }
    PyObject *value = PyObject_GetAttrString(node, "next_functions");
    if (value == NULL) {
        return NULL;
    }
    edges = PySequence_Fast(value, "next_functions must be a sequence");
    Py_DECREF(value);
    return edges;
}

/* one edge, unpacked as `child, nr = edge` does: borrowed references into `edge` */
static int
unpack_edge(PyObject *edge, PyObject **child, PyObject **nr)
{
    if (PyTuple_CheckExact(edge) && PyTuple_GET_SIZE(edge) == 2) {
        *child = PyTuple_GET_ITEM(edge, 0);
        *nr = PyTuple_GET_ITEM(edge, 1);
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "an edge of next_functions is not a (node, nr) pair");
    return -1;
}

/* engine._add_to_buffer(buffers, node, nr, grad) */
static int
add_to_buffer(PyObject *buffers, PyObject *node, Py_ssize_t nr, PyObject *grad)
{
    PyObject *slots = PyDict_GetItemWithError(buffers, node);
    if (slots == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        PyObject *meta = PyObject_GetAttrString(node, "input_meta");
        if (meta == NULL) {
            return -1;
        }
        Py_ssize_t n = PyObject_Length(meta);
        Py_DECREF(meta);
        if (n < 0) {
            return -1;
        }
        if (n < nr + 1) {
            n = nr + 1;
        }
        slots = PyList_New(n);
        if (slots == NULL) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(slots, i, Py_None);
        }
        int failed = PyDict_SetItem(buffers, node, slots);
        Py_DECREF(slots);
        if (failed) {
            return -1;
        }
    } else if (!PyList_Check(slots)) {
        PyErr_SetString(PyExc_TypeError, "run_graph: a buffer is not a list");
        return -1;
    } else {
        while (PyList_GET_SIZE(slots) < nr + 1) {
            if (PyList_Append(slots, Py_None) < 0) {
                return -1;
            }
        }
    }
    if (grad == Py_None) {
        return 0;
    }
    PyObject *old = PyList_GET_ITEM(slots, nr);
    PyObject *value;
    if (old == Py_None) {
        Py_INCREF(grad);
        value = grad;
    } else {
        value = PyNumber_Add(old, grad);
        if (value == NULL) {
            return -1;
        }
    }
    return PyList_SetItem(slots, nr, value);  /* steals `value` */
}

/* `grad` fitted to the input it flows to (engine._fit where its shape or dtype differs):
 * a new reference */
static PyObject *
fitted(PyObject *node, Py_ssize_t index, PyObject *grad, PyObject *child, PyObject *nr_obj,
       Py_ssize_t nr)
{
    PyObject *metas = PyObject_GetAttrString(child, "input_meta");
    if (metas == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyObject_Length(metas);
    PyObject *meta = n < 0 ? NULL : nr < n ? PySequence_GetItem(metas, nr) : (Py_INCREF(Py_None),
                                                                            Py_None);
    Py_DECREF(metas);
    if (meta == NULL) {
        return NULL;
    }
    int differs = 0;
    if (meta != Py_None) {
        PyObject *sizes = PyObject_GetAttr(grad, s_sizes);
        PyObject *want = sizes == NULL ? NULL : PySequence_GetItem(meta, 0);
        differs = want == NULL ? -1 : PyObject_RichCompareBool(sizes, want, Py_NE);
        Py_XDECREF(sizes);
        Py_XDECREF(want);
        if (differs == 0) {
            PyObject *dtype = PyObject_GetAttr(grad, s_dtype);
            PyObject *wanted = dtype == NULL ? NULL : PySequence_GetItem(meta, 1);
            differs = wanted == NULL ? -1 : dtype != wanted;
            Py_XDECREF(dtype);
            Py_XDECREF(wanted);
        }
    }
    Py_DECREF(meta);
    if (differs < 0) {
        return NULL;
    }
    if (!differs) {
        Py_INCREF(grad);
        return grad;
    }
    PyObject *position = PyLong_FromSsize_t(index);
    if (position == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_CallFunctionObjArgs(py_fit, node, position, grad, child,
                                                    nr_obj, NULL);
    Py_DECREF(position);
    return result;
}

/* dependencies[child] += delta (a missing child counts 0 when counting up, and is the
 * KeyError `dependencies[child] - 1` raises when counting down); the new count in *now */
static int
count_change(PyObject *dependencies, PyObject *child, long delta, long *now)
{
    PyObject *count = PyDict_GetItemWithError(dependencies, child);
    long have = 0;
    if (count != NULL) {
        have = PyLong_AsLong(count);
        if (have == -1 && PyErr_Occurred()) {
            return -1;
        }
    } else if (PyErr_Occurred()) {
        return -1;
    } else if (delta < 0) {
        PyErr_SetObject(PyExc_KeyError, child);
        return -1;
    }
    *now = have + delta;
    PyObject *value = PyLong_FromLong(*now);
    int failed = value == NULL || PyDict_SetItem(dependencies, child, value) < 0;
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* the dependencies of every node reachable from `roots` (step 1 of execute) */
static int
count_dependencies(PyObject *unique_roots, PyObject *dependencies)
{
    PyObject *seen = PySet_New(unique_roots);
    PyObject *stack = seen == NULL ? NULL : PySequence_List(unique_roots);
    if (stack == NULL) {
        Py_XDECREF(seen);
        return -1;
    }
    int failed = 0;
    while (!failed && PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *node = PyList_GET_ITEM(stack, top);
        Py_INCREF(node);
        failed = PyList_SetSlice(stack, top, top + 1, NULL) < 0;
        PyObject *edges = failed ? NULL : edges_of(node);
        Py_DECREF(node);
        if (edges == NULL) {
            failed = 1;
            break;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(edges);
        for (Py_ssize_t i = 0; i < n && !failed; i++) {
            PyObject *child, *nr;
            if (unpack_edge(PySequence_Fast_GET_ITEM(edges, i), &child, &nr) < 0) {
                failed = 1;
                break;
            }
            if (child == Py_None) {
                continue;
            }
            long have;
            if (count_change(dependencies, child, 1, &have) < 0) {
                failed = 1;
                break;
            }
            int known = PySet_Contains(seen, child);
            if (known < 0) {
                failed = 1;
            } else if (!known) {
                failed = PySet_Add(seen, child) < 0 || PyList_Append(stack, child) < 0;
            }
        }
        Py_DECREF(edges);
    }
    Py_DECREF(seen);
    Py_DECREF(stack);
    return failed ? -1 : 0;
}

static int
needs_tensor_hooks(PyObject *node)
{
    if (Py_TYPE(node) == accumulate_type) {
        return 1;
    }
    if (!PyObject_TypeCheck(node, node_type)) {  /* not a Node: ask its attributes */
        PyObject *hooks = PyObject_GetAttrString(node, "_tensor_pre_hooks");
        int on = hooks == NULL ? -1 : PyObject_IsTrue(hooks);
        Py_XDECREF(hooks);
        if (on != 0) {
            return on;
        }
        PyObject *kept = PyObject_GetAttrString(node, "_retains_grad");
        on = kept == NULL ? -1 : PyObject_IsTrue(kept);
        Py_XDECREF(kept);
        return on;
    }
    PyObject *hooks = SLOT(node, N_tensor_pre_hooks);
    int on = hooks == NULL ? 0 : PyObject_IsTrue(hooks);
    if (on != 0) {
        return on;
    }
    PyObject *kept = SLOT(node, N_retains_grad);
    return kept == NULL ? 0 : PyObject_IsTrue(kept);
}

/* engine._call(node, grads, keep_graph) for a plain node (not an AccumulateGrad, no node
 * hooks, anomaly mode off): apply when a gradient arrived, release, check the count; every
 * other node goes to the Python `_call` */
static PyObject *
call_node(PyObject *node, PyObject *grads, PyObject *keep_graph)
{
    int plain = !PyObject_TypeCheck(node, accumulate_type) && PyObject_TypeCheck(node, node_type)
                && PyList_CheckExact(grads) && PyList_CheckExact(anomaly)
                && PyList_GET_SIZE(anomaly) == 2;
    if (plain) {
        PyObject *pre = SLOT(node, N_pre_hooks), *post = SLOT(node, N_hooks);
        PyObject *edges = SLOT(node, N_next);
        plain = pre != NULL && post != NULL && edges != NULL && PyTuple_CheckExact(edges);
        int on = plain ? PyObject_IsTrue(pre) : 0;
        if (on == 0 && plain) {
            on = PyObject_IsTrue(post);
        }
        if (on == 0 && plain) {
            on = PyObject_IsTrue(PyList_GET_ITEM(anomaly, 0));
            if (on > 0) {
                on = PyObject_IsTrue(PyList_GET_ITEM(anomaly, 1));
            }
        }
        if (on < 0) {
            return NULL;
        }
        plain = plain && !on;
    }
    if (!plain) {
        return PyObject_CallFunctionObjArgs(py_call, node, grads, keep_graph, NULL);
    }
    Py_ssize_t expected = PyTuple_GET_SIZE(SLOT(node, N_next));
    int arrived = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(grads) && !arrived; i++) {
        arrived = PyList_GET_ITEM(grads, i) != Py_None;
    }
    PyObject *outputs;
    if (arrived) {
        PyObject *args = PyList_AsTuple(grads);
        outputs = args == NULL ? NULL : PyObject_CallMethodOneArg(node, s_apply, args);
        Py_XDECREF(args);
    } else {  /* no gradient arrived: nothing flows on */
        outputs = PyList_New(expected);
        for (Py_ssize_t i = 0; outputs != NULL && i < expected; i++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(outputs, i, Py_None);
        }
    }
    if (outputs == NULL) {
        return NULL;
    }
    int keep = PyObject_IsTrue(keep_graph);
    if (keep == 0) {
        PyObject *done = PyObject_CallMethodNoArgs(node, s_release_variables);
        if (done == NULL) {
            Py_DECREF(outputs);
            return NULL;
        }
        Py_DECREF(done);
    }
    Py_ssize_t got = keep < 0 ? -1 : PyObject_Length(outputs);
    if (got < 0) {
        Py_DECREF(outputs);
        return NULL;
    }
    expected = PyObject_Length(SLOT(node, N_next));  /* as _call reads it, after apply */
    if (expected < 0) {
        Py_DECREF(outputs);
        return NULL;
    }
    if (got != expected) {
        PyObject *name = PyObject_CallMethodNoArgs(node, s_name);
        if (name != NULL) {
            PyErr_Format(PyExc_RuntimeError,
                         "function %S returned an incorrect number of gradients (expected %zd, "
                         "got %zd)", name, expected, got);
            Py_DECREF(name);
        }
        Py_DECREF(outputs);
        return NULL;
    }
    return outputs;
}

/* one ready node: hooks, _call, and its gradients passed to its children */
static int
run_node(PyObject *node, PyObject *buffers, PyObject *dependencies, PyObject *keep_graph,
         Heap *heap, Py_ssize_t *counter)
{
    PyObject *grads = PyDict_GetItemWithError(buffers, node);
    if (grads != NULL) {  /* buffers.pop(node, None) or [] */
        Py_INCREF(grads);
        if (PyDict_DelItem(buffers, node) < 0) {
            Py_DECREF(grads);
            return -1;
        }
    } else if (PyErr_Occurred()) {
        return -1;
    }
    if (grads == NULL || PyObject_Not(grads) == 1) {
        Py_XDECREF(grads);
        grads = PyList_New(0);
        if (grads == NULL) {
            return -1;
        }
    }
    int hooked = needs_tensor_hooks(node);
    if (hooked < 0) {
        Py_DECREF(grads);
        return -1;
    }
    if (hooked) {
        PyObject *hooked_grads = PyObject_CallFunctionObjArgs(py_run_tensor_hooks, node, grads,
                                                              NULL);
        Py_DECREF(grads);
        if (hooked_grads == NULL) {
            return -1;
        }
        grads = hooked_grads;
    }
    PyObject *outputs = call_node(node, grads, keep_graph);
    Py_DECREF(grads);
    if (outputs == NULL) {
        return -1;
    }
    PyObject *edges = edges_of(node);
    if (edges == NULL) {
        Py_DECREF(outputs);
        return -1;
    }
    int failed = 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(edges);
    for (Py_ssize_t index = 0; index < n && !failed; index++) {
        PyObject *child, *nr_obj;
        if (unpack_edge(PySequence_Fast_GET_ITEM(edges, index), &child, &nr_obj) < 0) {
            failed = 1;
            break;
        }
        if (child == Py_None) {
            continue;
        }
        Py_ssize_t nr = PyLong_AsSsize_t(nr_obj);
        PyObject *grad = nr == -1 && PyErr_Occurred() ? NULL : PySequence_GetItem(outputs, index);
        if (grad == NULL) {
            failed = 1;
            break;
        }
        if (grad != Py_None) {
            PyObject *fit = fitted(node, index, grad, child, nr_obj, nr);
            Py_DECREF(grad);
            grad = fit;
            if (grad == NULL) {
                failed = 1;
                break;
            }
        }
        failed = add_to_buffer(buffers, child, nr, grad) < 0;
        Py_DECREF(grad);
        if (failed) {
            break;
        }
        long left;
        failed = count_change(dependencies, child, -1, &left) < 0;
        if (!failed && left == 0) {
            failed = heap_push(heap, child, (*counter)++) < 0;
        }
    }
    Py_DECREF(edges);
    Py_DECREF(outputs);  /* the engine keeps no reference to a gradient it passed on */
    return failed ? -1 : 0;
}

/* run_graph(roots, root_grads, keep_graph) */
static PyObject *
run_graph(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (py_call == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_accel_graph.run_graph: setup_engine not run");
        return NULL;
    }
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "run_graph(roots, root_grads, keep_graph)");
        return NULL;
    }
    PyObject *roots = PySequence_Fast(args[0], "run_graph: roots must be a sequence");
    if (roots == NULL) {
        return NULL;
    }
    PyObject *grads = PySequence_Fast(args[1], "run_graph: root_grads must be a sequence");
    PyObject *unique = PyDict_New();  /* dict.fromkeys(root nodes): insertion ordered */
    PyObject *dependencies = PyDict_New(), *buffers = PyDict_New();
    Heap heap = {NULL, 0, 0};
    Py_ssize_t counter = 0;
    int failed = grads == NULL || unique == NULL || dependencies == NULL || buffers == NULL;
    Py_ssize_t n = failed ? 0 : PySequence_Fast_GET_SIZE(roots);
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        PyObject *node, *nr;
        failed = unpack_edge(PySequence_Fast_GET_ITEM(roots, i), &node, &nr) < 0
                 || PyDict_SetItem(unique, node, Py_None) < 0;
    }
    failed = failed || count_dependencies(unique, dependencies) < 0;
    /* 2. the roots' buffers, then the roots without dependencies are ready */
    Py_ssize_t m = failed ? 0 : PySequence_Fast_GET_SIZE(grads);
    for (Py_ssize_t i = 0; i < n && i < m && !failed; i++) {
        PyObject *node = NULL, *nr_obj = NULL;
        if (unpack_edge(PySequence_Fast_GET_ITEM(roots, i), &node, &nr_obj) < 0) {
            failed = 1;
            break;
        }
        Py_ssize_t nr = PyLong_AsSsize_t(nr_obj);
        failed = (nr == -1 && PyErr_Occurred())
                 || add_to_buffer(buffers, node, nr, PySequence_Fast_GET_ITEM(grads, i)) < 0;
    }
    Py_ssize_t position = 0;
    PyObject *node, *unused;
    while (!failed && PyDict_Next(unique, &position, &node, &unused)) {
        int buffered = PyDict_Contains(buffers, node);
        PyObject *count = buffered > 0 ? PyDict_GetItemWithError(dependencies, node) : NULL;
        if (buffered < 0 || (count == NULL && PyErr_Occurred())) {
            failed = 1;
        } else if (buffered > 0 && (count == NULL || PyLong_AsLong(count) == 0)) {
            failed = heap_push(&heap, node, counter++) < 0;
        }
    }
    /* 3. newest first */
    while (!failed && heap.size > 0) {
        PyObject *ready = heap_pop(&heap);
        failed = run_node(ready, buffers, dependencies, args[2], &heap, &counter) < 0;
        Py_DECREF(ready);
    }
    heap_clear(&heap);
    Py_DECREF(roots);
    Py_XDECREF(grads);
    Py_XDECREF(unique);
    Py_XDECREF(dependencies);
    Py_XDECREF(buffers);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* setup_engine(Node, AccumulateGrad, _run_tensor_hooks, _call, _fit, ANOMALY) */
static PyObject *
setup_engine(PyObject *module, PyObject *args)
{
    PyObject *node, *accumulate, *hooks, *call, *fit, *anomaly_flags;
    if (!PyArg_ParseTuple(args, "O!O!OOOO!:setup_engine", &PyType_Type, &node, &PyType_Type,
                          &accumulate, &hooks, &call, &fit, &PyList_Type, &anomaly_flags)) {
        return NULL;
    }
    if (node_type != NULL && node_type != (PyTypeObject *)node) {
        PyErr_SetString(PyExc_TypeError, "_accel_graph.setup_engine: another Node class");
        return NULL;
    }
    if (slot_offset((PyTypeObject *)node, "next_functions", &N_next, NULL) < 0
        || slot_offset((PyTypeObject *)node, "_sequence_nr", &N_sequence, NULL) < 0
        || slot_offset((PyTypeObject *)node, "_tensor_pre_hooks", &N_tensor_pre_hooks, NULL) < 0
        || slot_offset((PyTypeObject *)node, "_retains_grad", &N_retains_grad, NULL) < 0
        || slot_offset((PyTypeObject *)node, "_pre_hooks", &N_pre_hooks, NULL) < 0
        || slot_offset((PyTypeObject *)node, "_hooks", &N_hooks, NULL) < 0) {
        return NULL;
    }
    if (s_apply == NULL && ((s_apply = PyUnicode_InternFromString("apply")) == NULL
                            || (s_release_variables =
                                    PyUnicode_InternFromString("release_variables")) == NULL
                            || (s_name = PyUnicode_InternFromString("name")) == NULL)) {
        return NULL;
    }
    Py_INCREF(anomaly_flags);
    Py_XSETREF(anomaly, anomaly_flags);
    Py_INCREF(node);
    Py_XSETREF(node_type, (PyTypeObject *)node);
    if (s_sizes == NULL && ((s_sizes = PyUnicode_InternFromString("_sizes")) == NULL
                            || (s_dtype = PyUnicode_InternFromString("_dtype")) == NULL)) {
        return NULL;
    }
    Py_INCREF(accumulate);
    Py_XSETREF(accumulate_type, (PyTypeObject *)accumulate);
    Py_INCREF(hooks);
    Py_XSETREF(py_run_tensor_hooks, hooks);
    Py_INCREF(call);
    Py_XSETREF(py_call, call);
    Py_INCREF(fit);
    Py_XSETREF(py_fit, fit);
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
    {"setup_engine", setup_engine, METH_VARARGS,
     "setup_engine(Node, AccumulateGrad, _run_tensor_hooks, _call, _fit, ANOMALY): what "
     "run_graph calls."},
    {"run_graph", (PyCFunction)(void (*)(void))run_graph, METH_FASTCALL,
     "run_graph(roots, root_grads, keep_graph): engine.execute's loop for a whole backward "
     "(engine.run_graph_reference)."},
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
