// A non-owning reference to a callable (as llvm::function_ref or C++26 std::function_ref): what a
// function takes when it calls its argument before returning and never keeps it, without the
// heap allocation or copy of std::function.
#pragma once

#include <type_traits>
#include <utility>

namespace kolo {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>)
      // Implicit: passed as an argument, like a lambda. The requires-clause keeps FunctionRef's own
      // copies away from this constructor, which clang-tidy 14 does not see.
      // NOLINTBEGIN(google-explicit-constructor,bugprone-forwarding-reference-overload)
      FunctionRef(F&& fn)
      // NOLINTEND(google-explicit-constructor,bugprone-forwarding-reference-overload)
      : object_(const_cast<void*>(static_cast<const void*>(&fn))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace kolo
