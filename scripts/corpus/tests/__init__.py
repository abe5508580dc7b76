"""Tests of the corpus builder; they never download anything. Run from the repository root:
python3 -m unittest discover -s scripts/corpus/tests -t scripts"""
