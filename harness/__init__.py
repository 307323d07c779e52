"""Host side of the IMA-appraisal test suite: build kernels, boot QEMU cells,
parse KTAP and kernel splats, report.  Nothing here runs on import."""
