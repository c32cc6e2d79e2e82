// numpy arrays made with numpy's own C API. nanobind's ndarray hands numpy a buffer object and
// calls numpy.asarray on it (about 0.4-0.7 us a call here, as long as encoding a short line);
// PyArray_SimpleNew / PyArray_SimpleNewFromData make the array directly (session 20). This is the
// only file that includes numpy's headers, so the API table (import_array) lives here alone.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
// Built with numpy 2's headers, usable with numpy 1.21 and later (the package's dependency): only
// functions numpy has had since 1.7 are called.
#define NPY_TARGET_VERSION NPY_1_21_API_VERSION
#include <numpy/arrayobject.h>

#include <cstring>

#include "common.h"

namespace tokenforge::py {
namespace {

template <class T> constexpr int npy_type();
template <> constexpr int npy_type<uint8_t>() { return NPY_UINT8; }
template <> constexpr int npy_type<uint32_t>() { return NPY_UINT32; }
template <> constexpr int npy_type<int64_t>() { return NPY_INT64; }
template <> constexpr int npy_type<uint64_t>() { return NPY_UINT64; }
template <> constexpr int npy_type<double>() { return NPY_FLOAT64; }

// numpy's API table, loaded at the first array made (with the GIL held): `import tokenforge`
// does not load numpy (tests/test_layout.py; it was 60 of 160 ms of every command-line call).
void need_numpy() {
  if (PyArray_API == nullptr && _import_array() < 0) throw nb::python_error();
}

}  // namespace

template <class T>
nb::object numpy_copy(const T* data, size_t n) {
  need_numpy();
  npy_intp shape[1] = {npy_intp(n)};
  PyObject* array = PyArray_SimpleNew(1, shape, npy_type<T>());
  if (array == nullptr) throw nb::python_error();
  if (n) std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)), data, n * sizeof(T));
  return nb::steal(array);
}

template <class T>
nb::object numpy_of(std::vector<T>* v) {
  std::unique_ptr<std::vector<T>> owned(v);
  need_numpy();
  if (v->empty()) return numpy_copy<T>(nullptr, 0);  // (an empty vector may have no data pointer)
  nb::capsule owner(v, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  owned.release();  // the capsule owns it now
  npy_intp shape[1] = {npy_intp(v->size())};
  PyObject* array = PyArray_SimpleNewFromData(1, shape, npy_type<T>(), v->data());
  if (array == nullptr) throw nb::python_error();
  nb::object result = nb::steal(array);
  // PyArray_SetBaseObject steals a reference to the base, even when it fails.
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner.release().ptr()) < 0)
    throw nb::python_error();
  return result;
}

template nb::object numpy_copy<uint32_t>(const uint32_t*, size_t);
template nb::object numpy_of<uint8_t>(std::vector<uint8_t>*);
template nb::object numpy_of<uint32_t>(std::vector<uint32_t>*);
template nb::object numpy_of<int64_t>(std::vector<int64_t>*);
template nb::object numpy_of<uint64_t>(std::vector<uint64_t>*);
template nb::object numpy_of<double>(std::vector<double>*);

}  // namespace tokenforge::py
