// A program outside normgrad, using it the way a user would: one include, one target.
// run_consumer_test.sh expects it to print "sum = 6".
#include <normgrad/normgrad.h>

#include <iostream>

int main() {
  normgrad::Tensor t = normgrad::ones({2, 3});
  std::cout << "numel = " << t.numel() << "\n";
  std::cout << "sum = " << t.sum().item() << "\n";
  return 0;
}
