"""data/tables"""
