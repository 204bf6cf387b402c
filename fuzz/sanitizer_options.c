/* Linked into every fuzz target: undefined behaviour stops the run like a
 * crash does. The library is compiled with recoverable UBSan checks (one
 * report, then on), which would let a long run print a report and still
 * count zero crashes. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }
