print("accessbench")
