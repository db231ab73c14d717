# Test decimal 64bit immediate value.
lddw %r0, 2147483648
exit
