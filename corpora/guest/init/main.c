/* Sites outside plain .text, which recordmcount must handle: .init.text, .text.unlikely (cold)
 * and a weak default that an architecture could override. */
#include "guest.h"

__weak_fn ulong arch_cpu_idle_prepare(ulong v) { return v ^ 0x5a5a; }

__init ulong start_kernel_once(ulong v) { return arch_cpu_idle_prepare(v) + 1; }

__cold_fn ulong unlikely_error_path(ulong v) { return v * 3 + 1; }
