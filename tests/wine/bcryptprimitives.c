/*
 * Test fixture, never shipped: Rust's std (1.78+) imports ProcessPrng from
 * bcryptprimitives.dll, which Wine 8 lacks (rust-lang/rust#128066), so every Rust program
 * exits at start-up under it. This shim exports ProcessPrng on top of RtlGenRandom
 * (advapi32's SystemFunction036). The Windows test builds it with mingw and puts it next to
 * ptyjobs.exe in a temporary directory.
 */
#include <windows.h>

typedef BOOLEAN (WINAPI *gen_random_fn)(PVOID, ULONG);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    static gen_random_fn gen_random;
    if (!gen_random) {
        HMODULE advapi = LoadLibraryA("advapi32.dll");
        if (!advapi)
            return FALSE;
        gen_random = (gen_random_fn)GetProcAddress(advapi, "SystemFunction036");
        if (!gen_random)
            return FALSE;
    }
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!gen_random(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
