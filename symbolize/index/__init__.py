"""The persistent address index: a binary's answers decoded once, then read through mmap."""
