print("apkpatch")
