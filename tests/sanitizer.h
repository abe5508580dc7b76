#pragma once
// Whether the tests run under AddressSanitizer (scripts/test --sanitize), for the few tests
// that must do something else there: it reserves terabytes of address space, so an address
// space limit cannot be tested; and it slows every memory access, so the whole-model gradient
// checks perturb a sample of each parameter's entries instead of all of them.

namespace testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_address_sanitizer = true;
#else
inline constexpr bool under_address_sanitizer = false;
#endif
#else
inline constexpr bool under_address_sanitizer = false;
#endif

}  // namespace testing
