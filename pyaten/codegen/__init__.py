"""pyaten.codegen"""
