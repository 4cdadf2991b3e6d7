/* Preloaded by scripts/valgrind.sh under valgrind only: CPython 3.11's _PyLong_New with the
 * new int's first digit set to 0.
 *
 * 3.11 leaves that digit unset when the int has no digits (its header: "in the case
 * ob_size == 0, the contents of ob_digit[0] may be undefined"), and int("0") or
 * int.from_bytes(b"\0", ...) then read it when they pick the cached small int
 * (maybe_small_long; 3.12 sets the digit itself). Memcheck reports that read, and the pointer to
 * the small int 0 it selects is "uninitialised" wherever it goes afterwards: importlib at
 * start-up, hypothesis's draws, data handed to ptc. No suppression can follow it without hiding
 * real errors. libpython calls _PyLong_New through its PLT, so this definition is the one
 * called; every int has room for one digit. */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

PyLongObject *_PyLong_New(Py_ssize_t size) {
    static PyLongObject *(*real)(Py_ssize_t);
    if (real == NULL) real = (PyLongObject * (*)(Py_ssize_t)) dlsym(RTLD_NEXT, "_PyLong_New");
    PyLongObject *v = real(size);
    if (v != NULL) v->ob_digit[0] = 0;
    return v;
}
