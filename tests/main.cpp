// The test runner: doctest's main. Each tests/*.cpp file covers one area.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
