// libFuzzer's entry point for a program that has its own main (compiler-rt's
// FuzzerInterface.h). Only accessfuzz built with -sanitize=fuzzer (scripts/fuzz) calls it;
// the symbol comes from the toolchain's libclang_rt.fuzzer, linked by that flag.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
