"""pyaten.core"""
