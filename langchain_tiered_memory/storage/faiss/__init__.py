"""FAISS: the default vector index (:mod:`.index`) and big users' approximate one (:mod:`.ivf`)."""
