// fastreduce._torch_core: a planned call (plan.hpp) on a torch tensor, in C++: the results come
// from torch's caching allocator (at::empty, as torch's own reductions get theirs), the stream is
// torch's current one, and the engine runs through fastreduce._core's C interface. From Python a
// repeated call is then one dictionary lookup and this one call, with no Python-level allocation.
//
// Built only where torch can be imported when the package is built (pip install
// --no-build-isolation .), against that torch: its headers and libraries, and its C++ library
// flags. fastreduce/_api.py imports it once torch is imported and falls back to the Python path
// where it is missing or does not load (another torch than the one it was built against).
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <exception>
#include <unordered_map>
#include <vector>

#include "plan.hpp"

#ifndef FASTREDUCE_TORCH_VERSION
#error "FASTREDUCE_TORCH_VERSION (torch.__version__ of the build) must be defined"
#endif

namespace {

using namespace fastreduce_python;

const CoreApi* core_api = nullptr;

// Type codes (plan.hpp) as torch's scalar types.
at::ScalarType scalar_type(int code) {
  switch (code) {
    case Bool: return at::kBool;
    case I8: return at::kChar;
    case U8: return at::kByte;
    case I16: return at::kShort;
    case U16: return at::kUInt16;
    case I32: return at::kInt;
    case U32: return at::kUInt32;
    case I64: return at::kLong;
    case U64: return at::kUInt64;
    case F16: return at::kHalf;
    case BF16: return at::kBFloat16;
    case F32: return at::kFloat;
    case F64: return at::kDouble;
    default: TORCH_CHECK(false, "fastreduce: unknown type code ", code);
  }
}

std::uintptr_t address(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<std::uintptr_t>(t.data_ptr()) : 0;
}

// The plan's reduction of the CUDA tensor x (of the dtype, shape and strides the plan was made
// for) on torch's current stream of x's device: the result, or for arg-extremes with values
// (values, indices). nullptr with a Python error set on failure.
PyObject* execute(const Plan* plan, const at::Tensor& x) {
  try {
    TORCH_CHECK(x.is_cuda(), "fastreduce: expected a CUDA tensor, got one on ", x.device());
    TORCH_CHECK(x.scalar_type() == scalar_type(plan->code), "fastreduce: the plan is for another dtype than ",
                x.scalar_type());
    const int device = x.get_device();
    const at::TensorOptions options = x.options();
    const c10::IntArrayRef shape(plan->shape, static_cast<std::size_t>(plan->ndim));
    const bool arg = plan->op == OpArgMax || plan->op == OpArgMin;
    at::Tensor out;
    at::Tensor indices;
    if (!arg || plan->values) out = at::empty(shape, options.dtype(scalar_type(plan->out_code)));
    if (arg) indices = at::empty(shape, options.dtype(at::kLong));
    const auto stream = reinterpret_cast<std::uintptr_t>(c10::cuda::getCurrentCUDAStream(device).stream());
    const char* error = nullptr;
    const auto in = reinterpret_cast<std::uintptr_t>(x.const_data_ptr());
    long long need = core_api->run(plan, in, 0, address(out), address(indices), stream, device, 0, 0, &error);
    if (need > 0) {  // the stream captures a graph: storage from torch's allocator (the graph's private pool)
      const at::Tensor temp = at::empty({need}, options.dtype(at::kByte));
      need = core_api->run(plan, in, 0, address(out), address(indices), stream, device, address(temp),
                           static_cast<std::size_t>(need), &error);
    }
    if (need < 0) {
      PyErr_SetString(PyExc_RuntimeError, error);
      return nullptr;
    }
    if (arg && !plan->values) return THPVariable_Wrap(std::move(indices));
    if (!arg && plan->want_code >= 0) out = out.to(scalar_type(plan->want_code));
    PyObject* first = THPVariable_Wrap(std::move(out));
    if (!arg || first == nullptr) return first;
    PyObject* second = THPVariable_Wrap(std::move(indices));
    if (second == nullptr) {
      Py_DECREF(first);
      return nullptr;
    }
    PyObject* pair = PyTuple_Pack(2, first, second);  // its own references: ours go either way
    Py_DECREF(first);
    Py_DECREF(second);
    return pair;
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "fastreduce: unknown error");
  }
  return nullptr;
}

// run(plan, x): execute() for a plan capsule of fastreduce._core.plan and a torch.Tensor.
PyObject* run(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "fastreduce._torch_core.run(plan, x) takes two arguments");
    return nullptr;
  }
  const auto* plan = static_cast<const Plan*>(PyCapsule_GetPointer(args[0], kPlanCapsule));
  if (plan == nullptr) return nullptr;
  if (!THPVariable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "fastreduce._torch_core.run: x must be a torch.Tensor");
    return nullptr;
  }
  return execute(plan, THPVariable_Unpack(args[1]));
}

// Plans by call, as fastreduce/_api.py keys them (_plans, _fplans): the op's code, param and values
// flag, x's dtype, shape and strides, dim, keepdim and mode, read here from the call's own
// arguments, so that a repeated call costs no Python-level key. Only plain arguments key a plan:
// x exactly a torch.Tensor on a CUDA device, dim None, an int or a tuple or list of ints (never a
// bool, which torch refuses), keepdim a bool, mode one of the mode names; anything else is
// answered by the Python path, which checks it. Each entry owns a reference to its capsule.
using Key = std::vector<std::int64_t>;
struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (const std::int64_t v : k) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};
constexpr std::size_t kPlanLimit = 4096;  // as _api.py's _PLAN_LIMIT: past it the map starts again
std::unordered_map<Key, PyObject*, KeyHash>* plans = nullptr;  // only touched with the GIL held

void forget_all() {
  for (auto& [key, capsule] : *plans) Py_DECREF(capsule);
  plans->clear();
}

// Appends an int to the key: a dim (exact: an int, never a bool), or op, param and values (the
// package's own; values may be a bool); false for anything else, or for one past 64 bits (a
// correction of 2^63 is the Python path's to answer).
bool add_int(Key& key, PyObject* v, bool exact) {
  if (exact ? !PyLong_CheckExact(v) : !PyLong_Check(v)) return false;
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow != 0 || (n == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  key.push_back(n);
  return true;
}

// The key of (op, param, values, x, dim, keepdim, mode) into `key`, and x; false (no Python error
// set) where the arguments are not plain: x a strided (not sparse, not nested) CUDA tensor.
bool make_key_of(Key& key, PyObject* const* args, const at::Tensor** x) {
  key.clear();
  for (int i = 0; i < 3; ++i) {
    if (!add_int(key, args[i], false)) return false;
  }
  if (!THPVariable_CheckExact(args[3])) return false;
  const at::Tensor& t = THPVariable_Unpack(args[3]);
  if (t.layout() != c10::kStrided || t.is_nested() || !t.is_cuda()) return false;
  PyObject* dim = args[4];
  if (dim == Py_None) {
    key.push_back(-1);
  } else if (PyLong_CheckExact(dim)) {
    key.push_back(-2);
    if (!add_int(key, dim, true)) return false;
  } else if (PyTuple_CheckExact(dim) || PyList_CheckExact(dim)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(dim);
    key.push_back(n);
    PyObject** items = PySequence_Fast_ITEMS(dim);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!add_int(key, items[i], true)) return false;
    }
  } else {
    return false;
  }
  if (args[5] != Py_True && args[5] != Py_False) return false;
  key.push_back(args[5] == Py_True);
  static const char* const kModes[] = {"fast", "reproducible", "exact"};
  int mode = -1;
  if (PyUnicode_CheckExact(args[6])) {
    for (int m = 0; m < 3 && mode < 0; ++m) {
      if (PyUnicode_CompareWithASCIIString(args[6], kModes[m]) == 0) mode = m;
    }
  }
  if (mode < 0) return false;
  key.push_back(mode);
  key.push_back(static_cast<std::int64_t>(t.scalar_type()));
  key.push_back(t.dim());
  for (const std::int64_t n : t.sizes()) key.push_back(n);
  for (const std::int64_t s : t.strides()) key.push_back(s);
  *x = &t;
  return true;
}

bool make_key(Key& key, PyObject* const* args, const at::Tensor** x) {
  try {
    return make_key_of(key, args, x);
  } catch (...) {  // a tensor whose sizes or strides cannot be read: the Python path says why
    return false;
  }
}

// remember(op, param, values, x, dim, keepdim, mode, plan): keeps the plan capsule for calls with
// these arguments (nothing where they are not plain).
PyObject* remember(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "fastreduce._torch_core.remember takes eight arguments");
    return nullptr;
  }
  if (PyCapsule_GetPointer(args[7], kPlanCapsule) == nullptr) return nullptr;
  Key key;
  const at::Tensor* x = nullptr;
  if (make_key(key, args, &x)) {
    if (plans->size() >= kPlanLimit) forget_all();
    Py_INCREF(args[7]);
    auto [at, added] = plans->try_emplace(std::move(key), args[7]);
    if (!added) {
      Py_DECREF(at->second);
      at->second = args[7];
    }
  }
  Py_RETURN_NONE;
}

// planned(op, param, values, x, dim, keepdim, mode): the call by its plan, or None where there is none.
PyObject* planned(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError, "fastreduce._torch_core.planned takes seven arguments");
    return nullptr;
  }
  thread_local Key key;  // reused: no allocation once it has grown
  const at::Tensor* x = nullptr;
  if (!make_key(key, args, &x)) Py_RETURN_NONE;
  const auto found = plans->find(key);
  if (found == plans->end()) Py_RETURN_NONE;
  // Owned for the call: torch's allocator may run Python (a dispatch mode, an out-of-memory
  // observer) that forgets the plans.
  PyObject* capsule = found->second;
  Py_INCREF(capsule);
  PyObject* result = execute(static_cast<const Plan*>(PyCapsule_GetPointer(capsule, kPlanCapsule)), *x);
  Py_DECREF(capsule);
  return result;
}

// forget(): drops every plan (fastreduce/_api.py's _plans and _fplans start again with it).
PyObject* forget(PyObject*, PyObject* const*, Py_ssize_t) {
  forget_all();
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&run)), METH_FASTCALL,
     "run(plan, x): a planned reduction (fastreduce._core.plan) of the CUDA tensor x, results from torch's allocator"},
    {"remember", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&remember)), METH_FASTCALL,
     "remember(op, param, values, x, dim, keepdim, mode, plan): keep the plan for calls with these arguments"},
    {"planned", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&planned)), METH_FASTCALL,
     "planned(op, param, values, x, dim, keepdim, mode): the call by its remembered plan, or None"},
    {"forget", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&forget)), METH_FASTCALL,
     "forget(): drop every remembered plan"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "_torch_core",
                          "fastreduce's planned calls on torch tensors (used by the fastreduce package)",
                          -1,
                          methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__torch_core() {
  // Only against the torch it was built with: another one may lay out its tensors otherwise.
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return nullptr;
  PyObject* version = PyObject_GetAttrString(torch, "__version__");
  Py_DECREF(torch);
  if (version == nullptr) return nullptr;
  PyObject* text = PyObject_Str(version);  // torch's TorchVersion is a str subclass
  Py_DECREF(version);
  if (text == nullptr) return nullptr;
  const int same = PyUnicode_CompareWithASCIIString(text, FASTREDUCE_TORCH_VERSION);
  Py_DECREF(text);
  if (same != 0) {
    PyErr_SetString(PyExc_ImportError,
                    "fastreduce._torch_core was built against torch " FASTREDUCE_TORCH_VERSION
                    ", another version is imported (rebuild: pip install --no-build-isolation .)");
    return nullptr;
  }
  core_api = static_cast<const CoreApi*>(PyCapsule_Import(kApiCapsule, 0));
  if (core_api == nullptr) return nullptr;
  if (core_api->version != kApiVersion) {
    PyErr_SetString(PyExc_ImportError, "fastreduce._torch_core: fastreduce._core is of another version");
    return nullptr;
  }
  plans = new std::unordered_map<Key, PyObject*, KeyHash>;  // lives as long as the process
  return PyModule_Create(&module_def);
}
